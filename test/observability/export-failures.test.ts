/**
 * Tracing against a collector that does not take the spans (docs/tracing.md, "When the
 * collector fails"): one that answers 500, a port that refuses connections, and a server
 * that accepts and never answers. Through the real CLI over loopback: the gateway logs the
 * failure (the first at once, then at most a line a minute, with a count), never the
 * exporter's headers, and a SIGTERM exits within the flush bound instead of waiting on the
 * collector.
 */
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RunningCli, startCli } from '../helpers/cli.js';
import { HOOK_TOKEN, tempDir, writeConfig } from '../helpers/gateway.js';
import { sleep, waitFor } from '../helpers/wait.js';

/** The flush bound of docs/tracing.md (2 s), plus the process's own exit on a loaded 2-core machine. */
const STOP_WITHIN_MS = 3_500;
const SECRET = 'otlp-secret-do-not-log';

interface Collector {
  url: string;
  /** Export requests it received (the refusing port: none). */
  requests: number;
  close(): Promise<void>;
}

const listen = async (server: Server | ReturnType<typeof createHttpServer>): Promise<string> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

/** A collector that reads each export and answers 500. */
async function answering500(): Promise<Collector> {
  const collector = { requests: 0 } as Collector;
  const server = createHttpServer((req, res) => {
    req.resume();
    req.on('end', () => {
      collector.requests++;
      res.writeHead(500, { 'content-type': 'text/plain' }).end('collector broken');
    });
  });
  collector.url = await listen(server);
  collector.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return collector;
}

/** A port nothing listens on: bound once, then closed. */
async function refusing(): Promise<Collector> {
  const server = createServer();
  const url = await listen(server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return { url, requests: 0, close: async () => {} };
}

/** A server that accepts connections, reads what it is sent and never answers. */
async function hanging(): Promise<Collector> {
  const sockets = new Set<Socket>();
  const collector = { requests: 0 } as Collector;
  const server = createServer((socket) => {
    collector.requests++;
    sockets.add(socket);
    socket.resume();
    socket.on('close', () => sockets.delete(socket));
  });
  collector.url = await listen(server);
  collector.close = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
  return collector;
}

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** The gateway's JSON log lines about tracing at warn (40) or above. */
const tracingWarnings = (output: string): LogLine[] =>
  output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine)
    .filter((line) => line.level >= 40 && line.msg.startsWith('tracing:'));

describe('a collector that fails', () => {
  let config: string;
  let cli: RunningCli | undefined;
  let collector: Collector | undefined;

  beforeAll(() => {
    config = writeConfig(tempDir());
  });
  afterEach(async () => {
    await cli?.kill('SIGKILL');
    cli = undefined;
    await collector?.close();
    collector = undefined;
  });

  const start = (endpoint: string, env: Record<string, string> = {}) =>
    startCli(['--config', config, '--port', '0'], {
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined,
      OTEL_SDK_DISABLED: undefined,
      OTEL_TRACES_EXPORTER: undefined,
      OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer ${SECRET}`,
      AGENTGATE_LOG_LEVEL: 'info',
      ...env,
    });

  const hook = async (url: string) => {
    const answer = await fetch(`${url}/hooks/wake`, {
      method: 'POST',
      headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'deploy finished' }),
    });
    expect(answer.status).toBe(200);
  };

  /** SIGTERM, and how long the process took to exit. */
  const stop = async (running: RunningCli) => {
    const started = performance.now();
    const exit = await running.kill('SIGTERM');
    const elapsedMs = performance.now() - started;
    cli = undefined;
    expect(exit.code).toBe(0);
    return { elapsedMs, output: running.output() };
  };

  it('answering 500: warns at the first failure, then holds the rest (many failures, few lines), and stops at once', async () => {
    collector = await answering500();
    cli = await start(collector.url, { OTEL_BSP_SCHEDULE_DELAY: '10' });
    const running = cli;
    await hook(running.url);
    await waitFor(() => tracingWarnings(running.output()).length > 0, 'a tracing warning', 5_000);
    const [first] = tracingWarnings(running.output());
    expect(first?.msg).toContain('HTTP 500');
    expect(first?.msg).toContain(`${collector.url}/v1/traces`);
    // Many more failed exports: one batch per hook request.
    for (let i = 0; i < 20; i++) {
      await hook(running.url);
      await sleep(30);
    }
    const target = collector;
    await waitFor(() => target.requests >= 15, '15 export requests', 10_000);
    expect(tracingWarnings(running.output())).toHaveLength(1);
    const { elapsedMs, output } = await stop(running);
    expect(elapsedMs).toBeLessThan(STOP_WITHIN_MS);
    const warnings = tracingWarnings(output);
    // The first failure, and at the stop one line counting those held since.
    expect(warnings.length).toBeLessThanOrEqual(3);
    expect(warnings.at(-1)?.msg).toMatch(/\d+ more span export\(s\) failed/);
    expect(warnings.at(-1)?.failures).toBeGreaterThanOrEqual(14);
    expect(output).not.toContain(SECRET);
    // Nor the collector's answer body.
    expect(output).not.toContain('collector broken');
  });

  it('a port that refuses: warns naming the refusal, and a SIGTERM exits within the bound', async () => {
    collector = await refusing();
    // A short export timeout: the exporter retries a refused connection until it runs out.
    cli = await start(collector.url, { OTEL_BSP_SCHEDULE_DELAY: '10', OTEL_EXPORTER_OTLP_TIMEOUT: '300' });
    const running = cli;
    await hook(running.url);
    await waitFor(() => tracingWarnings(running.output()).length > 0, 'a tracing warning', 5_000);
    expect(tracingWarnings(running.output())[0]?.msg).toContain('ECONNREFUSED');
    const { output } = await stop(running);
    expect(output).not.toContain(SECRET);
  });

  it('a port that refuses, with the default export timeout: the stop flush is cut at the bound and says so', async () => {
    collector = await refusing();
    // Only the stop's flush exports.
    cli = await start(collector.url, { OTEL_BSP_SCHEDULE_DELAY: '60000' });
    await hook(cli.url);
    const { elapsedMs, output } = await stop(cli);
    expect(elapsedMs).toBeLessThan(STOP_WITHIN_MS);
    const warnings = tracingWarnings(output);
    expect(warnings.map((w) => w.msg).join('\n')).toMatch(/not exported/);
    expect(output).not.toContain(SECRET);
  });

  it('a collector that never answers: the stop flush is cut at the bound; with a short timeout, a warning while running', async () => {
    collector = await hanging();
    cli = await start(collector.url, { OTEL_BSP_SCHEDULE_DELAY: '60000' });
    await hook(cli.url);
    const cut = await stop(cli);
    expect(cut.elapsedMs).toBeLessThan(STOP_WITHIN_MS);
    expect(collector.requests).toBeGreaterThan(0);
    expect(
      tracingWarnings(cut.output)
        .map((w) => w.msg)
        .join('\n'),
    ).toMatch(/not exported/);
    expect(cut.output).not.toContain(SECRET);

    cli = await start(collector.url, { OTEL_BSP_SCHEDULE_DELAY: '10', OTEL_EXPORTER_OTLP_TIMEOUT: '300' });
    const running = cli;
    await hook(running.url);
    await waitFor(() => tracingWarnings(running.output()).length > 0, 'a tracing warning', 5_000);
    expect(tracingWarnings(running.output())[0]?.msg).toMatch(/timed out/i);
    const { elapsedMs } = await stop(running);
    expect(elapsedMs).toBeLessThan(STOP_WITHIN_MS);
  });
});
