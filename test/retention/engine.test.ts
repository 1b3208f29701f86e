/**
 * The retention engine on a real SQLite store: a pass prunes both kinds batch
 * by batch and reports each batch's count; accepts committed while it prunes
 * are answered between batches (the ingress keeps answering); a kind kept
 * forever ("0") is not touched; stop ends a pass after the batch in progress.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { RetentionEngine } from '../../src/retention/engine.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { NewRun, PruneKind } from '../../src/store/types.js';
import { tempDir } from '../helpers/gateway.js';

const DAY = 86_400_000;
const OLD = Date.now() - 40 * DAY;
const MAIN = 'agent:main:main';
const log = createLogger('silent');

let dir: string;
let store: SqliteStore;
beforeEach(() => {
  dir = tempDir('agentgate-retention-');
  store = new SqliteStore({ path: join(dir, 'agentgate.db') });
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const run = (i: number): NewRun => ({
  id: `run_old_${i}`,
  agentId: 'main',
  sessionKey: `hook:old:${i}`,
  mainSessionKey: MAIN,
  name: null,
  message: 'm',
  model: null,
  thinking: null,
  timeoutSeconds: 600,
  wakeMode: 'next-heartbeat',
  deliver: false,
  channel: 'last',
  to: null,
  allowUnsafeExternalContent: false,
  source: 'hook:agent',
  createdAt: OLD,
});

/** `count` runs finished 40 days ago, each leaving a summary event (consumed at once). */
async function oldRuns(count: number): Promise<void> {
  const runs = Array.from({ length: count }, (_, i) => run(i));
  await store.accept(
    runs.map((r) => ({ kind: 'agent', run: r })),
    () => ({ status: 202, body: '{}' }),
  );
  await store.runs.claimRuns('w', OLD, 60_000, count);
  for (const r of runs) {
    await store.runs.completeRun({
      runId: r.id,
      owner: 'w',
      sessionKey: r.sessionKey,
      status: 'succeeded',
      reply: 'ok',
      error: null,
      finishedAt: OLD,
      transcript: [{ role: 'assistant', content: 'ok' }],
      summary: {
        id: `evt_${r.id}`,
        sessionKey: MAIN,
        text: r.id,
        source: 'run',
        wakeMode: 'next-heartbeat',
        ts: OLD,
      },
      delivery: { status: 'none', channel: null, to: null, reason: null },
    });
  }
  const events = await store.sessions.pendingEvents(MAIN, count);
  await store.consumeEvents(
    MAIN,
    events.map((e) => e.id),
    OLD,
  );
}

const settings = { runsMs: 30 * DAY, eventsMs: 30 * DAY, everyMs: 600_000 };

describe('RetentionEngine', () => {
  it('prunes both kinds in batches, reporting each batch', async () => {
    await oldRuns(50);
    const reported: [PruneKind, number][] = [];
    const engine = new RetentionEngine(store, settings, log, {
      batchSize: 20,
      onPruned: (kind, count) => reported.push([kind, count]),
    });
    expect(await engine.pass()).toEqual({ runs: 50, events: 50 });
    expect(reported).toEqual([
      ['runs', 20],
      ['runs', 20],
      ['runs', 10],
      ['events', 20],
      ['events', 20],
      ['events', 10],
    ]);
    expect(await engine.pass()).toEqual({ runs: 0, events: 0 });
  });

  it('answers accepts between batches while it prunes', async () => {
    await oldRuns(400);
    const engine = new RetentionEngine(store, settings, log, { batchSize: 10 });
    const order: string[] = [];
    const pass = engine.pass().then(() => order.push('pass done'));
    const wake = store
      .accept(
        [
          {
            kind: 'wake',
            event: {
              id: 'evt_new',
              sessionKey: MAIN,
              text: 'hi',
              source: 'hook:wake',
              wakeMode: 'now',
              ts: Date.now(),
            },
          },
        ],
        () => ({ status: 200, body: '{}' }),
      )
      .then(() => order.push('accepted'));
    await Promise.all([pass, wake]);
    expect(order).toEqual(['accepted', 'pass done']);
    expect((await store.sessions.pendingEvents(MAIN, 10)).map((e) => e.id)).toEqual(['evt_new']);
  });

  it('leaves a kind kept forever ("0") alone, and never starts with every "0"', async () => {
    await oldRuns(5);
    const engine = new RetentionEngine(store, { ...settings, runsMs: 0 }, log);
    expect(await engine.pass()).toEqual({ runs: 0, events: 5 });
    expect((await store.admin.listRuns({ limit: 10 }))?.runs).toHaveLength(5);
    expect(new RetentionEngine(store, { ...settings, everyMs: 0 }, log).enabled).toBe(false);
    expect(new RetentionEngine(store, { ...settings, runsMs: 0, eventsMs: 0 }, log).enabled).toBe(false);
  });

  it('stops after the batch in progress', async () => {
    await oldRuns(100);
    const reported: number[] = [];
    const engine = new RetentionEngine(store, settings, log, {
      batchSize: 10,
      onPruned: (_kind, count) => reported.push(count),
    });
    engine.start(); // the first pass starts at once
    await engine.stop();
    expect(reported.length).toBeLessThanOrEqual(1);
    expect((await store.admin.listRuns({ limit: 200 }))?.runs.length).toBeGreaterThanOrEqual(90);
  });
});
