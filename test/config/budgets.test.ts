/**
 * The rules of `budgets` (src/config/budget-rules.ts; docs/budgets.md): at most one scope, one
 * window, at least one limit, unique ids, and scopes naming a hook, token or agent that exists.
 * Every problem names its key path.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type LoadResult, loadConfigFile } from '../../src/config/load.js';
import { tempDir } from '../helpers/gateway.js';

const HOOK = 'hook-token-0123456789abcdef0123456789';
const ADMIN = 'admin-token-0123456789abcdef012345678';

let dir: string;
beforeEach(() => {
  dir = tempDir('agentgate-budgets-config-');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function load(budgets: unknown[]): LoadResult {
  const path = join(dir, 'agentgate.json5');
  const config = {
    gateway: { auth: { token: ADMIN } },
    hooks: {
      enabled: true,
      token: HOOK,
      tokens: [{ id: 'ci', token: 'ci-sender-token-0123456789abcdef01234' }],
      mappings: [{ id: 'github', match: { path: 'github' }, action: 'agent' }],
    },
    agents: { list: [{ id: 'main', default: true }] },
    budgets,
  };
  writeFileSync(path, JSON.stringify(config));
  return loadConfigFile(path, {});
}

const problemsOf = (result: LoadResult): string[] => {
  if (result.ok) throw new Error('expected problems, but the config was accepted');
  return result.problems;
};

describe('budgets in the config', () => {
  it('accepts each scope, each window, either limit or both', () => {
    const result = load([
      { id: 'github-daily', hook: 'github', perDay: { usd: 5 } },
      { id: 'wakes', hook: 'wake', perHour: { tokens: 1000 } },
      { id: 'ci', tokenId: 'ci', perHour: { tokens: 2_000_000 } },
      { id: 'default-token', tokenId: 'default', perDay: { usd: 1, tokens: 10 } },
      { id: 'main', agent: 'main', perDay: { usd: 20 } },
      { id: 'all', perDay: { usd: 50 } },
    ]);
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.config.budgets).toHaveLength(6);
  });

  it('refuses two scopes, no window, two windows, no limit and a repeated id, naming the key', () => {
    const problems = problemsOf(
      load([
        { id: 'a', hook: 'github', tokenId: 'ci', perDay: { usd: 5 } },
        { id: 'b', hook: 'github' },
        { id: 'c', perHour: { usd: 1 }, perDay: { usd: 5 } },
        { id: 'd', perDay: {} },
        { id: 'a', perDay: { usd: 0 } },
      ]),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^budgets\[0\]\.tokenId: a budget names at most one scope/),
        'budgets[1]: needs a window: perHour or perDay',
        expect.stringMatching(/^budgets\[2\]\.perDay: a budget has one window/),
        'budgets[3].perDay: needs a limit: usd, tokens or both',
        'budgets[4].id: "a" is already the id of budgets[0]',
        expect.stringMatching(/^budgets\[4\]\.perDay\.usd: must be more than 0/),
      ]),
    );
  });

  it('refuses a hook, token or agent that is not in the config', () => {
    const problems = problemsOf(
      load([
        { id: 'x', hook: 'gitlab', perDay: { usd: 5 } },
        { id: 'y', tokenId: 'nobody', perDay: { usd: 5 } },
        { id: 'z', agent: 'ghost', perDay: { usd: 5 } },
      ]),
    );
    expect(problems).toEqual([
      'budgets[0].hook: no hook "gitlab": name a mapping\'s id (hooks.mappings[].id), "agent" or "wake"',
      'budgets[1].tokenId: no hook token "nobody" (hooks.tokens[].id, or "default" for hooks.token)',
      'budgets[2].agent: no agent "ghost" in agents.list',
    ]);
  });
});
