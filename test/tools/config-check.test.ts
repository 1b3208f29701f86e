/**
 * What `agentgate config check` says of tools (docs/tools.md, "Checking the config"): a
 * selector naming an unknown server is a problem, by key path; an agent with tools on a
 * `command` or `echo` model is a warning; a stdio server's `cwd` is resolved.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { ADMIN_TOKEN, HOOK_TOKEN, tempDir } from '../helpers/gateway.js';

let dir: string;
beforeEach(() => {
  dir = tempDir('agentgate-tools-config-');
  mkdirSync(dir, { recursive: true });
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function write(extra: Record<string, unknown>): string {
  const path = join(dir, 'agentgate.json5');
  const config = {
    gateway: { auth: { token: ADMIN_TOKEN } },
    hooks: { enabled: true, token: HOOK_TOKEN },
    models: {
      providers: {
        openai: { api: 'openai-chat', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-test' },
        echo: { api: 'echo' },
      },
    },
    agents: { defaults: { model: 'openai/gpt-4o-mini', models: [{ id: 'echo/echo', alias: 'offline' }] } },
    tools: {
      servers: {
        repo: { transport: 'stdio', command: ['node', 'repo.js'], cwd: 'servers' },
        tickets: { transport: 'http', url: 'https://tickets.internal/mcp' },
      },
    },
    ...extra,
  };
  writeFileSync(path, JSON.stringify(config), { mode: 0o600 });
  return path;
}

describe('config check: tools', () => {
  it('a selector naming an unknown server is a problem; wildcards in the server part are not', async () => {
    const path = write({
      agents: {
        defaults: { model: 'openai/gpt-4o-mini' },
        list: [
          {
            id: 'main',
            tools: { allow: ['repo.*', 'tikets.create_ticket', '*.search'], approval: ['tix.*'] },
          },
        ],
      },
      hooks: {
        enabled: true,
        token: HOOK_TOKEN,
        mappings: [
          { id: 'github', match: { path: 'github' }, action: 'agent', tools: ['repo.get_pr', 'rep.*'] },
        ],
      },
    });
    const result = await runCliInProcess(['config', 'check', '--config', path]);
    expect(result.code).toBe(1);
    expect(result.stderr.split('\n')).toEqual([
      'agents.list[0].tools.allow[1]: "tikets.create_ticket" names no server in tools.servers (configured: repo, tickets)',
      'agents.list[0].tools.approval[0]: "tix.*" names no server in tools.servers (configured: repo, tickets)',
      'hooks.mappings[0].tools[1]: "rep.*" names no server in tools.servers (configured: repo, tickets)',
      `${path}: 3 problem(s)`,
      '',
    ]);
  });

  it('a selector that is not <server>.<tool> is named by the schema', async () => {
    const path = write({ agents: { list: [{ id: 'main', tools: { allow: ['repo'] } }] } });
    const result = await runCliInProcess(['config', 'check', '--config', path]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'agents.list[0].tools.allow[0]: must be "<server>.<tool>", with * as a wildcard (e.g. "repo.*")',
    );
  });

  it('an agent with tools on an echo or command model is a warning, not a problem', async () => {
    const path = write({
      agents: {
        defaults: { model: 'openai/gpt-4o-mini', models: [{ id: 'echo/echo', alias: 'offline' }] },
        list: [
          { id: 'main', default: true, tools: { allow: ['repo.*'] } },
          { id: 'demo', model: 'offline', tools: { allow: ['repo.*'] } },
          { id: 'plain', model: 'echo/echo' },
        ],
      },
    });
    const result = await runCliInProcess(['config', 'check', '--config', path]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(
      'warning: agents.list[1].tools: its model "echo/echo" is of a provider with api "echo", which takes no tools\n',
    );
    expect(result.stdout).toBe(`${path}: ok\n`);
  });

  it('resolves a stdio server’s cwd against the config dir, the config dir when not set', () => {
    const path = write({
      tools: {
        servers: {
          repo: { transport: 'stdio', command: ['node', 'repo.js'], cwd: 'servers' },
          other: { transport: 'stdio', command: ['node', 'other.js'] },
          abs: { transport: 'stdio', command: ['node', 'abs.js'], cwd: '/srv/mcp' },
        },
      },
    });
    const loaded = loadConfigFile(path, {});
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    expect(loaded.config.tools.servers).toMatchObject({
      repo: { cwd: join(dir, 'servers') },
      other: { cwd: dir },
      abs: { cwd: '/srv/mcp' },
    });
  });
});
