/**
 * `agentgate doctor` and tools (docs/tools.md, "doctor"), with the built CLI: each MCP
 * server is started (stdio) or connected (http) and its tools named; a server that cannot
 * start is a `fail` naming why; an agent with tools on an `echo` model is a warning; a
 * selector of an unknown server fails. No env or header value is ever printed.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeMcpHttp, startFakeMcpHttp } from '../fakes/mcp-http.js';
import { runCli } from '../helpers/cli.js';
import { ADMIN_TOKEN, HOOK_TOKEN, tempDir } from '../helpers/gateway.js';
import { STDIO_FIXTURE } from './support.js';

const ENV_SECRET = 'doctor-stdio-secret-7788';
const HEADER_SECRET = 'Bearer doctor-http-secret-5566';
const FIXTURE_TOOLS =
  '10 tool(s): get_pull_request, fail, jsonrpc_error, slow, crash, env, snapshot, add_tool, record, echo';

let fake: FakeMcpHttp;
let dir: string;

beforeAll(async () => {
  fake = await startFakeMcpHttp();
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  dir = tempDir('agentgate-doctor-tools-');
  return () => rmSync(dir, { recursive: true, force: true });
});

function writeConfig(extra: { agents: unknown; servers?: Record<string, unknown> }): string {
  const path = join(dir, 'agentgate.json5');
  const config = {
    gateway: { bind: '127.0.0.1', port: 1, auth: { token: ADMIN_TOKEN } },
    hooks: { enabled: true, token: HOOK_TOKEN },
    models: { providers: { echo: { api: 'echo' } } },
    agents: extra.agents,
    tools: {
      servers: extra.servers ?? {
        repo: {
          transport: 'stdio',
          command: [process.execPath, STDIO_FIXTURE],
          env: { MCP_FIXTURE_SECRET: ENV_SECRET },
        },
        tickets: { transport: 'http', url: fake.url, headers: { Authorization: HEADER_SECRET } },
        broken: { transport: 'stdio', command: [join(dir, 'missing-server')] },
      },
    },
  };
  writeFileSync(path, JSON.stringify(config), { mode: 0o600 });
  return path;
}

/** `<verdict> <name> <message>` lines, by check name. */
function verdicts(stdout: string): Map<string, { status: string; message: string }> {
  const out = new Map<string, { status: string; message: string }>();
  for (const line of stdout.split('\n')) {
    const match = /^(ok|warn|fail)\s+(.+?)\s{2,}(.*)$/.exec(line);
    if (match) out.set(match[2] as string, { status: match[1] as string, message: match[3] as string });
  }
  return out;
}

const env = { AGENTGATE_CONFIG: '', AGENTGATE_HOME: '', OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' };

describe('agentgate doctor: tools', () => {
  it('names each server’s tools, a server that cannot start, and an agent whose model takes no tools', async () => {
    const path = writeConfig({
      agents: {
        defaults: { model: 'echo/echo' },
        list: [{ id: 'main', tools: { allow: ['repo.*', 'tickets.*'] } }],
      },
    });
    const result = await runCli(['doctor', '--config', path, '--timeout', '30'], env, 90_000);
    const checks = verdicts(result.stdout);
    expect(checks.get('tools server repo')).toEqual({ status: 'ok', message: `stdio, ${FIXTURE_TOOLS}` });
    expect(checks.get('tools server tickets')).toEqual({ status: 'ok', message: `http, ${FIXTURE_TOOLS}` });
    expect(checks.get('tools server broken')).toEqual({
      status: 'fail',
      message: `cannot start: cannot run ${join(dir, 'missing-server')}: ENOENT`,
    });
    expect(checks.get('tools')).toEqual({
      status: 'warn',
      message: 'agent main: tools, but a model that takes none',
    });
    expect(result.stdout).toContain(
      '- agents.list[0].tools: its model "echo/echo" is of a provider with api "echo", which takes no tools',
    );
    // The warning is the tools line's: the config line stays ok.
    expect(checks.get('config')?.status).toBe('ok');
    expect(result.code).toBe(1);
    expect(fake.requests.some((request) => request.headers.authorization === HEADER_SECRET)).toBe(true);
    expect(result.stdout + result.stderr).not.toContain(ENV_SECRET);
    expect(result.stdout + result.stderr).not.toContain('doctor-http-secret');
  });

  it('a selector of an unknown server fails the tools line and the config', async () => {
    const path = writeConfig({
      agents: {
        defaults: { model: 'echo/echo' },
        list: [{ id: 'main', tools: { allow: ['repo.*', 'tikets.*'] } }],
      },
      servers: { repo: { transport: 'stdio', command: [process.execPath, STDIO_FIXTURE] } },
    });
    const result = await runCli(['doctor', '--config', path, '--timeout', '30'], env, 90_000);
    const checks = verdicts(result.stdout);
    expect(checks.get('tools')).toEqual({
      status: 'fail',
      message: 'selectors name servers that are not configured',
    });
    const problem =
      'agents.list[0].tools.allow[1]: "tikets.*" names no server in tools.servers (configured: repo)';
    expect(result.stdout).toContain(`- ${problem}`);
    expect(checks.get('config')?.status).toBe('fail');
    // The servers that are configured are still probed.
    expect(checks.get('tools server repo')?.status).toBe('ok');
    expect(result.code).toBe(1);
  });
});
