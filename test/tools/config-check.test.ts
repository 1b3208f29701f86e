/**
 * What `agentgate config check` says of tools (docs/tools.md, "Checking the config"): a
 * selector naming an unknown server is a problem, by key path; an agent with tools on a
 * `command` or `echo` model is a warning; a stdio server's `cwd` is resolved.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import JSON5 from 'json5';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mappingTools } from '../../src/agents/run-tools.js';
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

describe('docs/tools.md, the GitHub walkthrough', () => {
  it("its config is valid as shown, and its mapping's runs get the three tools, one of them under approval", async () => {
    const docs = readFileSync(fileURLToPath(new URL('../../docs/tools.md', import.meta.url)), 'utf8');
    const section = docs.slice(docs.indexOf('## End to end: the GitHub MCP server'));
    const block = /```json5\n([\s\S]*?)```/.exec(section)?.[1];
    expect(block).toBeDefined();
    const pat = join(dir, 'github-pat');
    writeFileSync(pat, 'github_pat_example', { mode: 0o600 });
    const shown = JSON5.parse((block as string).replaceAll('/etc/agentgate/github-pat', pat));
    // Its alert route's platform needs a bot token of its own (docs/channels.md).
    const path = write({ ...shown, channels: { telegram: { botToken: '123:abc' } } });
    const loaded = loadConfigFile(path, { GITHUB_WEBHOOK_SECRET: 'whsec' });
    if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
    const agent = loaded.config.agents.list.find((entry) => entry.id === 'main');
    expect(agent?.tools).toMatchObject({ approval: ['github.add_issue_comment'], maxSteps: 10 });
    expect(loaded.config.tools.servers.github).toMatchObject({
      transport: 'stdio',
      env: { GITHUB_PERSONAL_ACCESS_TOKEN: 'github_pat_example' },
    });
    expect(mappingTools(loaded.config, 'hook:github')).toEqual([
      'github.pull_request_read',
      'github.get_file_contents',
      'github.add_issue_comment',
    ]);
  });
});
