/** The run queue's heads: one hot session key with a deep queue never hides other keys' runs. */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Action, NewRun } from '../../src/store/types.js';
import { tempDir } from '../helpers/gateway.js';

let seq = 0;
const run = (sessionKey: string): Action => {
  seq++;
  const newRun: NewRun = {
    id: `run_${String(seq).padStart(6, '0')}`,
    agentId: 'main',
    sessionKey,
    mainSessionKey: 'agent:main:main',
    name: null,
    message: `m${seq}`,
    model: 'echo/echo',
    thinking: null,
    timeoutSeconds: 60,
    wakeMode: 'next-heartbeat',
    deliver: false,
    channel: 'last',
    to: null,
    allowUnsafeExternalContent: false,
    source: 'hook:agent',
    createdAt: seq,
  };
  return { kind: 'agent', run: newRun };
};
const render = () => ({ status: 202, body: '{}' });

describe('run queue heads', () => {
  let store: SqliteStore;
  afterEach(() => store?.close());

  it('claims the head of each key in acceptance order, and the next one only after completion', async () => {
    store = new SqliteStore({ path: join(tempDir(), 'q.db') });
    await store.accept(
      Array.from({ length: 300 }, () => run('hook:hot')),
      render,
    );
    await store.accept([run('hook:other')], render);
    const first = await store.runs.claimRuns('w1', 1000, 60_000, 4);
    expect(first.map((r) => r.sessionKey)).toEqual(['hook:hot', 'hook:other']);
    expect(await store.runs.claimRuns('w1', 1000, 60_000, 4)).toEqual([]); // both heads are running

    const hotHead = first[0] as (typeof first)[number];
    const done = await store.runs.completeRun({
      runId: hotHead.id,
      owner: 'w1',
      sessionKey: 'hook:hot',
      status: 'succeeded',
      reply: 'ok',
      error: null,
      finishedAt: 2000,
      transcript: [],
      summary: {
        id: 'evt_x',
        sessionKey: 'agent:main:main',
        text: 'Hook: ok',
        source: 'run:x',
        wakeMode: 'next-heartbeat',
        ts: 2000,
      },
      delivery: { status: 'none', channel: null, to: null, reason: null },
    });
    expect(done).toBe(true);
    const next = await store.runs.claimRuns('w1', 3000, 60_000, 4);
    expect(next.map((r) => r.message)).toEqual([`m${Number(hotHead.message.slice(1)) + 1}`]);
  });

  it('takes back a run whose lease expired', async () => {
    store = new SqliteStore({ path: join(tempDir(), 'q.db') });
    await store.accept([run('hook:a')], render);
    expect(await store.runs.claimRuns('w1', 1000, 10, 1)).toHaveLength(1);
    expect(await store.runs.claimRuns('w2', 1005, 10, 1)).toHaveLength(0);
    const reclaimed = await store.runs.claimRuns('w2', 2000, 10, 1);
    expect(reclaimed).toHaveLength(1);
    expect(reclaimed[0]?.attempts).toBe(2);
  });
});
