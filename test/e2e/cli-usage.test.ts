/**
 * `agentgate usage` (docs/usage.md, "The command line") against a real gateway in this process
 * over HTTP: a table of the runs that finished in the window, per hook by default or as
 * `--by` says, the costliest first, with a total line; `--json` prints the API's answer; an
 * unknown `--by` is refused before any request. Runs are completed with their usage through the
 * gateway's own store, the worker off.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunUsage } from '../../src/store/types.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { ADMIN_TOKEN, HOOK_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  gw = await startTestGateway({}, { workers: false });
  env = { AGENTGATE_CONFIG: '', AGENTGATE_HOME: '', HOME: join(gw.dir, 'home'), AGENTGATE_LOG_LEVEL: 'warn' };
  await finishedRun({
    model: 'claude/claude-sonnet-4-5',
    inputTokens: 1_234_567,
    outputTokens: 8910,
    cacheReadTokens: 1_000_000,
    cacheWriteTokens: 20_000,
    costUsd: 1.234,
  });
  await finishedRun({
    model: 'oai/gpt-5-mini',
    inputTokens: 300,
    outputTokens: 20,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    costUsd: null,
  });
  await finishedRun(
    {
      model: 'oai/gpt-5-mini',
      inputTokens: 100,
      outputTokens: 5,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      costUsd: 0.0005,
    },
    3 * 86_400_000,
  );
});

afterAll(async () => {
  await gw?.stop();
});

/** A run accepted by the agent hook and completed `agoMs` ago with `usage`. */
async function finishedRun(usage: RunUsage, agoMs = 60_000): Promise<void> {
  const answer = await gw.hook('agent', { message: 'hello', deliver: false });
  const runId = answer.body.runId as string;
  const [run] = await gw.gateway.store.runs.claimRuns('w', Date.now(), 60_000, 1);
  const finishedAt = Date.now() - agoMs;
  await gw.gateway.store.runs.completeRun({
    runId,
    owner: 'w',
    sessionKey: run?.sessionKey as string,
    status: 'succeeded',
    reply: 'ok',
    error: null,
    finishedAt,
    transcript: [],
    summary: {
      id: `evt_${runId}`,
      sessionKey: run?.mainSessionKey as string,
      text: 'done',
      source: `run:${runId}`,
      wakeMode: 'next-heartbeat',
      ts: finishedAt,
    },
    delivery: { status: 'none', channel: null, to: null, reason: null },
    usage,
  });
}

async function cli(args: string[]) {
  const result = await runCliInProcess(
    [...args, '--config', join(gw.dir, 'agentgate.json5'), '--url', gw.url],
    env,
  );
  for (const token of [HOOK_TOKEN, ADMIN_TOKEN]) {
    expect(result.stdout).not.toContain(token);
    expect(result.stderr).not.toContain(token);
  }
  return result;
}

describe('agentgate usage', () => {
  it('prints the last 24 h per hook by default', async () => {
    const result = await cli(['usage']);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^HOOK +RUNS +INPUT +CACHE READ +CACHE WRITE +OUTPUT +COST$/);
    expect(lines[1]).toMatch(/^hook:agent +2 +1,234,867 +1,000,000 +20,000 +8,930 +\$1\.23$/);
    expect(lines).toHaveLength(2);
  });

  it('--by model --since 7d: one line per model, the costliest first, and a total', async () => {
    const result = await cli(['usage', '--by', 'model', '--since', '7d']);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^MODEL +RUNS +INPUT/);
    expect(lines[1]).toMatch(/^claude\/claude-sonnet-4-5 +1 +1,234,567 +1,000,000 +20,000 +8,910 +\$1\.23$/);
    expect(lines[2]).toMatch(/^oai\/gpt-5-mini +2 +400 +0 +0 +25 +\$0\.0005$/);
    expect(lines[3]).toMatch(/^total +3 +1,234,967 +1,000,000 +20,000 +8,935 +\$1\.23$/);
  });

  it('--by token asks for tokenId; --json prints the answer', async () => {
    const result = await cli(['usage', '--by', 'token', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ usage: [{ key: 'default', runs: 2, costUsd: 1.234 }] });
  });

  it('a window without runs says so; an unknown --by or --since is refused', async () => {
    const empty = await cli(['usage', '--since', '2h', '--until', '1h']);
    expect(empty.code, empty.stderr).toBe(0);
    expect(empty.stdout).toMatch(/^no runs finished since \d{4}-/);
    const bad = await cli(['usage', '--by', 'colour']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('colour');
    const badTime = await cli(['usage', '--since', 'yesterday']);
    expect(badTime.code).toBe(1);
    expect(badTime.stderr).toContain('--since');
  });
});
