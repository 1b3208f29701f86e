/**
 * The gateway's tool source, built on first use (src/tools/lazy-source.ts): it answers as
 * the source built at start-up would — no tools for an agent without `tools`, the servers of
 * the config it was given, every reload applied in order and logged as before.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { ToolServerConfig } from '../../src/tools/config.js';
import { createLazyToolSource } from '../../src/tools/lazy-source.js';
import type { McpToolSource } from '../../src/tools/source.js';
import { agentTools, capturedLog, stdioServer } from './support.js';

let dir: string;
let logged: ReturnType<typeof capturedLog>;
let source: McpToolSource | undefined;

beforeEach(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'agentgate-lazy-tools-')));
  logged = capturedLog();
});
afterEach(async () => {
  await source?.close();
  source = undefined;
  rmSync(dir, { recursive: true, force: true });
});

const config = (servers: Record<string, ToolServerConfig>) => ({
  configDir: dir,
  tools: { servers, approvalTimeout: '1h' },
});
const names = async (allow: string[]) =>
  ((await source?.forRun(agentTools(allow)))?.tools ?? []).map((tool) => tool.name).sort();
const reloadLines = () => logged.lines.filter((line) => String(line.msg).startsWith('config reloaded'));

it('offers nothing to an agent without tools, and closes without having started anything', async () => {
  source = createLazyToolSource(config({ repo: stdioServer() }), logged.log);
  expect(await source.forRun(undefined)).toBeUndefined();
  await source.close();
  expect(logged.lines.filter((line) => line.msg === 'mcp server started')).toEqual([]);
});

it('builds the source from its config on the first run with tools', async () => {
  source = createLazyToolSource(config({ repo: stdioServer() }), logged.log);
  expect(await names(['repo.echo', 'repo.fail'])).toEqual(['repo.echo', 'repo.fail']);
  const set = await source.forRun(agentTools(['repo.echo']));
  expect(await set?.call('repo.echo', { text: 'hi' }, new AbortController().signal)).toMatchObject({
    status: 'ok',
  });
});

it('applies reloads made before and after it is built, in order, logging them as before', async () => {
  source = createLazyToolSource(config({}), logged.log);
  source.reload(config({})); // no server before or after: nothing to apply, nothing logged
  expect(reloadLines()).toEqual([]);
  source.reload(config({ repo: stdioServer() })); // a server added
  expect(await names(['repo.echo'])).toEqual(['repo.echo']);
  expect(reloadLines()).toMatchObject([{ added: ['repo'], changed: [], removed: [] }]);
  source.reload(config({})); // and removed again
  expect(await names(['repo.echo'])).toEqual([]);
  expect(reloadLines()).toMatchObject([{ added: ['repo'] }, { removed: ['repo'] }]);
});

it('probes a server as the built source does', async () => {
  source = createLazyToolSource(config({ repo: stdioServer() }), logged.log);
  expect(await source.probe('repo')).toMatchObject({ ok: true, tools: expect.arrayContaining(['echo']) });
  expect(await source.probe('nope')).toEqual({ ok: false, reason: 'no server "nope" in tools.servers' });
});
