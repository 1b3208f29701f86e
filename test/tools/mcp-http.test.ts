/**
 * Tools from an MCP server over Streamable HTTP (docs/tools.md, "Servers"), against the
 * SDK-built loopback server (test/fakes/mcp-http.ts): listing and calling with the
 * configured headers on every request (and never in the log), errors as results, a
 * dropped connection and a server that forgot its session, list_changed, and a server
 * nobody listens on.
 */
import { createServer } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createToolSource, type McpToolSource } from '../../src/tools/source.js';
import type { RunToolSet } from '../../src/tools/types.js';
import { type FakeMcpHttp, startFakeMcpHttp } from '../fakes/mcp-http.js';
import { waitFor } from '../helpers/wait.js';
import { agentTools, capturedLog, QUICK_LIMITS } from './support.js';

const TOKEN = 'Bearer tickets-token-0099';

let fake: FakeMcpHttp;
let source: McpToolSource;
let logged: ReturnType<typeof capturedLog>;

beforeEach(async () => {
  fake = await startFakeMcpHttp();
  logged = capturedLog();
  source = createToolSource(
    {
      configDir: '/',
      tools: {
        servers: { tickets: { transport: 'http', url: fake.url, headers: { Authorization: TOKEN } } },
        approvalTimeout: '1h',
      },
    },
    logged.log,
    { limits: QUICK_LIMITS },
  );
});

afterEach(async () => {
  await source.close();
  await fake.close();
});

async function ticketTools(): Promise<RunToolSet> {
  const set = await source.forRun(agentTools(['tickets.*']));
  if (!set) throw new Error('expected a tool set');
  return set;
}

const call = (set: RunToolSet, name: string, args: Record<string, unknown> = {}) =>
  set.call(name, args, new AbortController().signal);

describe('tools from a Streamable HTTP MCP server', () => {
  it('lists and calls with the configured headers on every request, never logged', async () => {
    const set = await ticketTools();
    expect(set.tools.map((tool) => tool.name)).toContain('tickets.get_pull_request');
    expect(await call(set, 'tickets.get_pull_request', { number: 12 })).toEqual({
      status: 'ok',
      text: 'PR #12: Fix the flaky upload test (open, 2 approvals)',
    });
    expect(fake.requests.map((request) => request.rpc)).toEqual(
      expect.arrayContaining(['initialize', 'tools/list', 'tools/call']),
    );
    for (const request of fake.requests) expect(request.headers.authorization).toBe(TOKEN);
    expect(fake.sessionsStarted()).toBe(1);
    // Stopping ends the session, as the spec asks of a client that no longer needs it.
    await source.close();
    expect(fake.requests.at(-1)).toMatchObject({ method: 'DELETE', headers: { authorization: TOKEN } });
    expect(logged.text()).not.toContain('tickets-token-0099');
  });

  it('isError and JSON-RPC errors are error results', async () => {
    const set = await ticketTools();
    expect(await call(set, 'tickets.fail')).toEqual({
      status: 'error',
      text: 'the tracker is read-only today',
    });
    expect(await call(set, 'tickets.jsonrpc_error')).toEqual({
      status: 'error',
      text: 'tickets.jsonrpc_error: the tracker database is locked (JSON-RPC error -32603)',
    });
  });

  it('a dropped connection is an error result; the next call connects again', async () => {
    const set = await ticketTools();
    const dropped = await call(set, 'tickets.crash');
    expect(dropped.status).toBe('error');
    expect(dropped.text).toMatch(
      /^tickets\.crash: server "tickets" failed during the call \(.+\); it is started again on next use$/,
    );
    expect(await call(set, 'tickets.get_pull_request', { number: 1 })).toMatchObject({ status: 'ok' });
    expect(fake.sessionsStarted()).toBe(2);
  });

  it('a server that forgot the session (restarted) gets a new one, and the call goes through', async () => {
    const set = await ticketTools();
    await fake.forgetSessions();
    expect(await call(set, 'tickets.get_pull_request', { number: 5 })).toMatchObject({ status: 'ok' });
    expect(fake.sessionsStarted()).toBe(2);
    const calls = fake.requests.filter((request) => request.rpc === 'tools/call');
    expect(calls).toHaveLength(2);
  });

  it('lists the tools again when the server says they changed', async () => {
    const set = await ticketTools();
    await call(set, 'tickets.add_tool');
    const later = await waitFor(async () => {
      const next = await ticketTools();
      return next.tools.some((tool) => tool.name === 'tickets.late_tool') && next;
    }, 'late_tool in the next run’s tools');
    expect(await call(later, 'tickets.late_tool')).toEqual({ status: 'ok', text: 'late' });
  });

  it('a server nobody listens on is left out, and probe says why', async () => {
    const closed = await freePort();
    await source.close();
    source = createToolSource(
      {
        configDir: '/',
        tools: {
          servers: { gone: { transport: 'http', url: `http://127.0.0.1:${closed}/mcp`, headers: {} } },
          approvalTimeout: '1h',
        },
      },
      logged.log,
      { limits: QUICK_LIMITS },
    );
    expect(await source.probe('gone')).toEqual({
      ok: false,
      reason: 'server "gone" cannot start: ECONNREFUSED',
    });
  });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
