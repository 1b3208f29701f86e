/**
 * Tools from an MCP server over stdio (docs/tools.md, "Servers"), against the SDK-built
 * fixture (test/fixtures/mcp/stdio-server.mjs): listing and calling, results and errors as
 * the model gets them, one process kept across runs, a restart after a crash, the tool list
 * refreshed on list_changed, exactly the configured environment, stderr to the log without
 * secrets, the call limit and the run's signal, a server that cannot start, and reload.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MINIMAL_PATH } from '../../src/tools/mcp/limits.js';
import { createToolSource, type McpToolSource } from '../../src/tools/source.js';
import type { RunToolSet } from '../../src/tools/types.js';
import { waitFor } from '../helpers/wait.js';
import { agentTools, capturedLog, QUICK_LIMITS, stdioServer } from './support.js';

const SECRET = 'fixture-secret-value-0042';

let dir: string;
let source: McpToolSource | undefined;
let logged: ReturnType<typeof capturedLog>;

beforeEach(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'agentgate-mcp-')));
  logged = capturedLog();
});

afterEach(async () => {
  await source?.close();
  source = undefined;
  vi.unstubAllEnvs();
  rmSync(dir, { recursive: true, force: true });
});

function open(servers = { repo: stdioServer({ MCP_FIXTURE_SECRET: SECRET }) }, limits = QUICK_LIMITS) {
  source = createToolSource({ configDir: dir, tools: { servers, approvalTimeout: '1h' } }, logged.log, {
    limits,
  });
  return source;
}

async function repoTools(allow = ['repo.*'], mapping?: string[]): Promise<RunToolSet> {
  const set = await (source ?? open()).forRun(agentTools(allow, ['repo.crash']), mapping);
  if (!set) throw new Error('expected a tool set');
  return set;
}

const call = (set: RunToolSet, name: string, args: Record<string, unknown> = {}) =>
  set.call(name, args, new AbortController().signal);

const starts = () => logged.lines.filter((line) => line.msg === 'mcp server started').length;

describe('tools from a stdio MCP server', () => {
  it('offers its tools as <server>.<tool> with their schemas, and calls them', async () => {
    const set = await repoTools();
    expect(set.tools.map((tool) => tool.name)).toEqual([
      'repo.get_pull_request',
      'repo.fail',
      'repo.jsonrpc_error',
      'repo.slow',
      'repo.crash',
      'repo.env',
      'repo.snapshot',
      'repo.add_tool',
      'repo.record',
      'repo.echo',
    ]);
    const pr = set.tools.find((tool) => tool.name === 'repo.get_pull_request');
    expect(pr?.description).toBe('Reads a pull request');
    expect(pr?.inputSchema).toMatchObject({ type: 'object', properties: { number: { type: 'integer' } } });
    expect(set.maxSteps).toBe(8);
    expect(set.needsApproval('repo.crash')).toBe(true);
    expect(set.needsApproval('repo.get_pull_request')).toBe(false);

    expect(await call(set, 'repo.get_pull_request', { number: 7 })).toEqual({
      status: 'ok',
      text: 'PR #7: Fix the flaky upload test (open, 2 approvals)',
    });
  });

  it('gives the model text: non-text content as a note, isError and JSON-RPC errors as error results', async () => {
    const set = await repoTools();
    expect(await call(set, 'repo.snapshot')).toEqual({ status: 'ok', text: 'build chart:\n[image omitted]' });
    expect(await call(set, 'repo.fail')).toEqual({ status: 'error', text: 'the tracker is read-only today' });
    expect(await call(set, 'repo.jsonrpc_error')).toEqual({
      status: 'error',
      text: 'repo.jsonrpc_error: the tracker database is locked (JSON-RPC error -32603)',
    });
    // Arguments the tool's schema refuses: the server's own answer, as an error result.
    const bad = await call(set, 'repo.get_pull_request', { number: 'seven' });
    expect(bad.status).toBe('error');
    expect(bad.text).toContain('number');
  });

  it('starts the server once and keeps it across runs', async () => {
    const first = await repoTools();
    const second = await repoTools();
    await call(first, 'repo.get_pull_request', { number: 1 });
    await call(second, 'repo.get_pull_request', { number: 2 });
    expect(starts()).toBe(1);
  });

  it('a crash is an error result; the next call starts the server again', async () => {
    const set = await repoTools();
    const crashed = await call(set, 'repo.crash');
    expect(crashed.status).toBe('error');
    expect(crashed.text).toBe(
      'repo.crash: server "repo" failed during the call (exited with code 3); it is started again on next use',
    );
    expect(
      logged.lines.some((line) => line.msg === 'mcp server stopped; it is started again when next needed'),
    ).toBe(true);
    expect(await call(set, 'repo.get_pull_request', { number: 9 })).toMatchObject({ status: 'ok' });
    expect(starts()).toBe(2);
  });

  it('lists the tools again when the server says they changed', async () => {
    const set = await repoTools();
    expect(set.tools.map((tool) => tool.name)).not.toContain('repo.late_tool');
    expect(await call(set, 'repo.add_tool')).toEqual({ status: 'ok', text: 'added late_tool' });
    const later = await waitFor(async () => {
      const next = await repoTools();
      return next.tools.some((tool) => tool.name === 'repo.late_tool') && next;
    }, 'late_tool in the next run’s tools');
    expect(await call(later, 'repo.late_tool')).toEqual({ status: 'ok', text: 'late' });
    // The run that began before the change was not offered it.
    expect((await call(set, 'repo.late_tool')).text).toBe(
      'repo.late_tool: no such tool is offered to this run',
    );
  });

  it('gets exactly the configured environment, a minimal PATH, and the config dir as cwd', async () => {
    vi.stubEnv('AGENTGATE_GATEWAY_ONLY', 'gateway-secret-value');
    open({ repo: stdioServer({ REPO_TOKEN: 'configured-token-value' }) });
    const set = await repoTools();
    const seen = JSON.parse((await call(set, 'repo.env', { name: 'REPO_TOKEN' })).text);
    expect(seen.names).toEqual(['PATH', 'REPO_TOKEN']);
    expect(seen.value).toBe('configured-token-value');
    expect(seen.cwd).toBe(dir);
    const path = JSON.parse((await call(set, 'repo.env', { name: 'PATH' })).text);
    expect(path.value).toBe(MINIMAL_PATH);
    const gateway = JSON.parse((await call(set, 'repo.env', { name: 'AGENTGATE_GATEWAY_ONLY' })).text);
    expect(gateway.value).toBeNull();
  });

  it('a configured PATH and cwd are used as given', async () => {
    open({ repo: stdioServer({ PATH: '/opt/tools/bin:/usr/bin' }, 'sub') });
    const { mkdirSync } = await import('node:fs');
    mkdirSync(join(dir, 'sub'));
    const set = await repoTools();
    const seen = JSON.parse((await call(set, 'repo.env', { name: 'PATH' })).text);
    expect(seen).toMatchObject({ names: ['PATH'], value: '/opt/tools/bin:/usr/bin', cwd: join(dir, 'sub') });
  });

  it('logs its stderr at debug, with the values of its env redacted', async () => {
    await repoTools();
    const line = await waitFor(
      () => logged.lines.find((entry) => entry.msg === 'mcp server stderr'),
      'the fixture’s stderr line in the log',
    );
    expect(line).toMatchObject({
      level: 20,
      server: 'repo',
      stderr: 'fixture starting; token is [redacted]',
    });
    expect(logged.text()).not.toContain(SECRET);
  });

  it('a call over the limit is an error result, and the server goes on serving', async () => {
    open(undefined, { ...QUICK_LIMITS, callTimeoutMs: 300 });
    const set = await repoTools();
    expect(await call(set, 'repo.slow', { ms: 60_000 })).toEqual({
      status: 'error',
      text: 'repo.slow: no answer within 0.3 s',
    });
    expect(await call(set, 'repo.slow', { ms: 0 })).toEqual({ status: 'ok', text: 'done after 0 ms' });
  });

  it('the run’s signal ends a call by throwing its reason', async () => {
    const set = await repoTools();
    const run = new AbortController();
    const pending = set.call('repo.slow', { ms: 60_000 }, run.signal);
    run.abort(new Error('run timed out'));
    await expect(pending).rejects.toThrow('run timed out');
    await expect(set.call('repo.get_pull_request', { number: 1 }, run.signal)).rejects.toThrow(
      'run timed out',
    );
  });

  it('offers only what the agent allows, narrowed by the mapping; nothing else is called', async () => {
    const narrowed = await repoTools(['repo.get_*', 'repo.fail'], ['repo.get_pull_request', 'repo.crash']);
    expect(narrowed.tools.map((tool) => tool.name)).toEqual(['repo.get_pull_request']);
    expect(await call(narrowed, 'repo.crash')).toEqual({
      status: 'error',
      text: 'repo.crash: no such tool is offered to this run',
    });
    expect(await call(narrowed, 'repo.get_pull_request', { number: 3 })).toMatchObject({ status: 'ok' });
    expect(starts()).toBe(1);
    // An agent without tools runs as before: no tool set at all.
    expect(await source?.forRun(undefined, ['repo.*'])).toBeUndefined();
  });

  it('a server that cannot start is left out of the run and named by probe', async () => {
    const servers = {
      repo: stdioServer(),
      broken: { transport: 'stdio' as const, command: [join(dir, 'no-such-server')], env: {} },
    };
    open(servers);
    const set = await repoTools(['repo.get_pull_request', 'broken.*']);
    expect(set.tools.map((tool) => tool.name)).toEqual(['repo.get_pull_request']);
    expect(logged.lines.find((line) => line.msg === 'tools: a server is left out of this run')).toMatchObject(
      {
        server: 'broken',
      },
    );
    await source?.close();
    open(servers);
    expect(await source?.probe('broken')).toEqual({
      ok: false,
      reason: `server "broken" cannot start: cannot run ${join(dir, 'no-such-server')}: ENOENT`,
    });
    expect(await source?.probe('repo')).toMatchObject({
      ok: true,
      tools: expect.arrayContaining(['get_pull_request']),
    });
    expect(await source?.probe('nowhere')).toEqual({
      ok: false,
      reason: 'no server "nowhere" in tools.servers',
    });
  });

  it('reload: a changed server runs its new config on next use; a removed one is stopped', async () => {
    open({ repo: stdioServer({ MODE: 'before' }) });
    const set = await repoTools();
    expect(JSON.parse((await call(set, 'repo.env', { name: 'MODE' })).text).value).toBe('before');
    source?.reload({
      configDir: dir,
      tools: { servers: { repo: stdioServer({ MODE: 'after' }) }, approvalTimeout: '1h' },
    });
    expect(JSON.parse((await call(set, 'repo.env', { name: 'MODE' })).text).value).toBe('after');
    expect(starts()).toBe(2);
    source?.reload({ configDir: dir, tools: { servers: {}, approvalTimeout: '1h' } });
    expect(await call(set, 'repo.get_pull_request', { number: 1 })).toEqual({
      status: 'error',
      text: 'repo.get_pull_request: server "repo" is no longer configured',
    });
  });
});
