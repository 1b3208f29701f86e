/**
 * GET /readyz (CONTRACT §9, no auth): 200 {"ok":true} once the store answers
 * and the gateway's parts run; 503 `unavailable` otherwise. On PostgreSQL the
 * database is taken away through a TCP relay this test cuts and restores: the
 * gateway stays up, /readyz says 503 while the database is gone and 200 again
 * once it is back, by itself.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerReadiness } from '../../src/server/readiness.js';
import { readAnswer, startTestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { expectError } from '../ingress/support.js';
import { createTestDatabase, PG_ADMIN_URL, PG_ENABLED } from '../store/engines.js';

/** A TCP relay to the PostgreSQL server: `cut` drops every connection and stops listening, `open` listens again on the same port. */
class Relay {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  async open(): Promise<void> {
    const target = new URL(PG_ADMIN_URL);
    this.server = createServer((client) => {
      const upstream = connect(Number(target.port || 5432), target.hostname);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server?.listen(this.port, '127.0.0.1', resolve));
    const address = this.server.address();
    if (typeof address === 'object' && address) this.port = address.port;
  }

  async cut(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

const readyz = async (url: string) => readAnswer(await fetch(`${url}/readyz`));

describe('GET /readyz on SQLite', () => {
  it('is 200 without any token once the gateway runs (workers on)', async () => {
    const gw = await startTestGateway({}, { workers: true });
    try {
      const answer = await readyz(gw.url);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body).toEqual({ ok: true });
    } finally {
      await gw.stop();
    }
  });

  it('is 503 unavailable while the store does not answer, or a part is not running', async () => {
    const Fastify = (await import('fastify')).default;
    let running = true;
    let failing = false;
    let hanging = false;
    const app = Fastify();
    // As in the admin scope: answer schemas document, answers are sent as they are.
    app.setSerializerCompiler(() => (data) => JSON.stringify(data));
    app.setErrorHandler((error: Error & { statusCode?: number; code?: string }, _request, reply) => {
      reply.code(error.statusCode ?? 500).send({ ok: false, error: error.message, code: error.code });
    });
    registerReadiness(app, {
      isRunning: () => running,
      pingTimeoutMs: 200,
      store: {
        ping: () =>
          hanging
            ? new Promise(() => {})
            : failing
              ? Promise.reject(new Error('disk I/O error'))
              : Promise.resolve(),
      },
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      expect((await readyz(url)).status).toBe(200);
      failing = true;
      const failed = await readyz(url);
      expectError(failed, 503, 'unavailable');
      expect(failed.body.error).toContain('disk I/O error');
      failing = false;
      hanging = true;
      const slow = await readyz(url);
      expectError(slow, 503, 'unavailable');
      expect(slow.body.error).toContain('within 200 ms');
      hanging = false;
      running = false;
      expectError(await readyz(url), 503, 'unavailable');
      running = true;
      expect((await readyz(url)).status).toBe(200);
    } finally {
      await app.close();
    }
  });
});

describe.runIf(PG_ENABLED)('GET /readyz on PostgreSQL, the database going away', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database?.drop());

  it('is 503 while the database is unreachable and 200 again once it is back, without a restart', async () => {
    const relay = new Relay();
    await relay.open();
    const url = new URL(database.url);
    url.port = String(relay.port);
    const gw = await startTestGateway(
      { store: { driver: 'postgres', url: url.toString() } },
      { workers: true },
    );
    try {
      expect((await readyz(gw.url)).status).toBe(200);
      await relay.cut();
      const down = await readyz(gw.url);
      expectError(down, 503, 'unavailable');
      expect(down.headers.get('retry-after')).toBe('1');
      expect((await gw.admin('/healthz')).status).toBe(200); // alive, not ready
      await relay.open();
      const back = await waitFor(async () => {
        const answer = await readyz(gw.url);
        return answer.status === 200 ? answer : undefined;
      }, '/readyz to be 200 again');
      expect(back.body).toEqual({ ok: true });
    } finally {
      await gw.stop();
      await relay.cut().catch(() => {});
    }
  }, 60_000);
});
