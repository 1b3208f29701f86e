/**
 * The embedded SQLite store, used directly: atomic accept of wake events and
 * runs, coalescing, idempotency (replay, conflict, expiry, pruning), event
 * paging, persistence across reopen, migrations and WAL mode; one writer per
 * file and the modes of the files it creates.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { StoreInUseError } from '../../src/store/sqlite/writer-lock.js';
import {
  type Action,
  type Committed,
  type IdempotencyClaim,
  type NewRun,
  type StoredAnswer,
  StoreUnavailableError,
} from '../../src/store/types.js';
import { tempDir } from '../helpers/gateway.js';

const MAIN = 'agent:main:main';
const T0 = Date.UTC(2025, 0, 2, 3, 4, 5);

let dir: string;
let path: string;
let open: SqliteStore[];

beforeEach(() => {
  dir = tempDir('agentgate-store-');
  // A folder that does not exist yet: the store creates it.
  path = join(dir, 'state', 'agentgate.db');
  open = [];
});
afterEach(async () => {
  for (const store of open) await closeStore(store);
  rmSync(dir, { recursive: true, force: true });
});

function openStore(): SqliteStore {
  const store = new SqliteStore({ path });
  open.push(store);
  return store;
}

/** Closes a store opened by `openStore` (each store is closed once). */
async function closeStore(store: SqliteStore): Promise<void> {
  open = open.filter((s) => s !== store);
  await store.close();
}

let counter = 0;
function wake(text: string, sessionKey = MAIN, ts = T0): Action {
  counter += 1;
  return {
    kind: 'wake',
    event: { id: `evt_${counter}`, sessionKey, text, source: 'hook:wake', wakeMode: 'now', ts },
  };
}

function agent(overrides: Partial<NewRun> = {}): Action {
  counter += 1;
  return {
    kind: 'agent',
    run: {
      id: `run_${counter}`,
      agentId: 'main',
      sessionKey: 'hook:ingress',
      mainSessionKey: MAIN,
      name: 'CI',
      message: 'build failed',
      model: null,
      thinking: null,
      timeoutSeconds: 600,
      wakeMode: 'now',
      deliver: false,
      channel: 'last',
      to: null,
      allowUnsafeExternalContent: false,
      source: 'hook:agent',
      createdAt: T0,
      ...overrides,
    },
  };
}

/** Renders the committed ids as the answer body, like the ingress does. */
const render = (committed: Committed[]): StoredAnswer => ({ status: 200, body: JSON.stringify(committed) });

function claim(key: string, bodyHash: string, now = T0, ttlMs = 24 * 3600_000): IdempotencyClaim {
  return { scope: '/hooks/agent', key, bodyHash, now, ttlMs };
}

async function committedOf(store: SqliteStore, actions: Action[], idem?: IdempotencyClaim) {
  const result = await store.accept(actions, render, idem);
  if (result.kind !== 'committed') throw new Error(`expected a commit, got ${result.kind}`);
  return result;
}

describe('accept', () => {
  it('commits wake events and runs in one call and shows them afterwards', async () => {
    const store = openStore();
    const actions = [
      wake('disk full', MAIN, T0),
      agent({ name: null, deliver: true, to: '+1555', model: 'echo/echo' }),
    ];
    const result = await committedOf(store, actions);
    const eventId = (actions[0] as Extract<Action, { kind: 'wake' }>).event.id;
    const runId = (actions[1] as Extract<Action, { kind: 'agent' }>).run.id;
    expect(result.committed).toEqual([
      { kind: 'wake', eventId, outcome: 'queued' },
      { kind: 'agent', runId },
    ]);
    expect(result.answer).toEqual({ status: 200, body: JSON.stringify(result.committed) });

    expect(await store.listEvents(MAIN, { limit: 10 })).toEqual([
      {
        id: eventId,
        ts: new Date(T0).toISOString(),
        text: 'disk full',
        source: 'hook:wake',
        status: 'pending',
        tokenId: null,
      },
    ]);
    expect(await store.getRun(runId)).toEqual({
      runId,
      attachments: [],
      steps: 0,
      waitingFor: null,
      usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: null },
      status: 'queued',
      agentId: 'main',
      sessionKey: 'hook:ingress',
      model: 'echo/echo',
      createdAt: new Date(T0).toISOString(),
      startedAt: null,
      finishedAt: null,
      notBefore: null,
      reply: null,
      error: null,
      delivery: { status: 'pending', channel: 'last', to: '+1555', reason: null },
      callback: { status: 'none', attempts: 0 },
      tokenId: null,
    });
  });

  it('a run with deliver false has delivery status none', async () => {
    const store = openStore();
    const action = agent({ deliver: false });
    await committedOf(store, [action]);
    const run = await store.getRun((action as Extract<Action, { kind: 'agent' }>).run.id);
    expect(run?.delivery).toEqual({ status: 'none', channel: null, to: null, reason: null });
  });

  it('answers undefined for an unknown run and an empty list for an unknown session', async () => {
    const store = openStore();
    expect(await store.getRun('run_nope')).toBeUndefined();
    expect(await store.listEvents('agent:nobody:main', { limit: 10 })).toEqual([]);
  });

  it('writes nothing when the transaction fails part-way (nothing half-written)', async () => {
    const store = openStore();
    const first = agent();
    await committedOf(store, [first]);
    const duplicateId = (first as Extract<Action, { kind: 'agent' }>).run.id;
    const event = wake('must not survive');
    await expect(store.accept([event, agent({ id: duplicateId })], render)).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    expect(await store.listEvents(MAIN, { limit: 10 })).toEqual([]);
  });

  it('records no idempotency key when rendering the answer fails', async () => {
    const store = openStore();
    const failing = () => {
      throw new Error('render failed');
    };
    await expect(store.accept([wake('x')], failing, claim('k', 'h1'))).rejects.toThrow();
    expect(await store.listEvents(MAIN, { limit: 10 })).toEqual([]);
    const retry = await store.accept([wake('x')], render, claim('k', 'h2'));
    expect(retry.kind).toBe('committed');
  });

  it('close can be called more than once', async () => {
    const store = openStore();
    await committedOf(store, [wake('x')]);
    await closeStore(store);
    await expect(store.close()).resolves.toBeUndefined();
  });

  it('fails with StoreUnavailableError once closed', async () => {
    const store = openStore();
    await closeStore(store);
    await expect(store.accept([wake('late')], render)).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});

describe('coalescing of wake events', () => {
  it('the same text as the newest pending event returns that event as coalesced', async () => {
    const store = openStore();
    const first = await committedOf(store, [wake('deploy done')]);
    const again = await committedOf(store, [wake('deploy done')]);
    const firstId = (first.committed[0] as { eventId: string }).eventId;
    expect(again.committed).toEqual([{ kind: 'wake', eventId: firstId, outcome: 'coalesced' }]);
    expect((await store.listEvents(MAIN, { limit: 10 }))?.map((e) => e.id)).toEqual([firstId]);
  });

  it('a different text is a new event, and only the newest pending event coalesces', async () => {
    const store = openStore();
    await committedOf(store, [wake('A')]);
    const b = await committedOf(store, [wake('B')]);
    expect(b.committed[0]).toMatchObject({ outcome: 'queued' });
    // "A" is pending but not the newest any more: a new event.
    const a2 = await committedOf(store, [wake('A')]);
    expect(a2.committed[0]).toMatchObject({ outcome: 'queued' });
    expect((await store.listEvents(MAIN, { limit: 10 }))?.map((e) => e.text)).toEqual(['A', 'B', 'A']);
  });

  it('does not coalesce across sessions', async () => {
    const store = openStore();
    await committedOf(store, [wake('same', MAIN)]);
    const other = await committedOf(store, [wake('same', 'agent:ops:main')]);
    expect(other.committed[0]).toMatchObject({ outcome: 'queued' });
  });

  it('coalesces within one batch', async () => {
    const store = openStore();
    const result = await committedOf(store, [wake('twice'), wake('twice')]);
    const [first, second] = result.committed as { eventId: string; outcome: string }[];
    expect(first?.outcome).toBe('queued');
    expect(second).toEqual({ kind: 'wake', eventId: first?.eventId, outcome: 'coalesced' });
  });

  it('does not coalesce with a consumed event', async () => {
    const store = openStore();
    const first = await committedOf(store, [wake('again')]);
    const firstId = (first.committed[0] as { eventId: string }).eventId;
    expect(await store.consumeEvents(MAIN, [firstId], T0 + 1)).toBe(1);
    expect(await store.consumeEvents(MAIN, [firstId], T0 + 2)).toBe(0); // already consumed
    const second = await committedOf(store, [wake('again')]);
    expect(second.committed[0]).toMatchObject({ outcome: 'queued' });
    expect((await store.listEvents(MAIN, { limit: 10 }))?.map((e) => e.status)).toEqual([
      'consumed',
      'pending',
    ]);
  });
});

describe('idempotency', () => {
  it('replays the first answer for the same key and body, and does no new work', async () => {
    const store = openStore();
    const first = await committedOf(store, [agent()], claim('k1', 'hash-a'));
    const replay = await store.accept([agent()], render, claim('k1', 'hash-a', T0 + 1000));
    expect(replay).toEqual({ kind: 'replay', answer: first.answer });
    const raw = new Database(path, { readonly: true });
    expect(raw.prepare('SELECT count(*) AS n FROM runs').get()).toEqual({ n: 1 });
    raw.close();
  });

  it('reports a conflict for the same key with a different body, and writes nothing', async () => {
    const store = openStore();
    await committedOf(store, [wake('one')], claim('k1', 'hash-a'));
    expect(await store.accept([wake('two')], render, claim('k1', 'hash-b'))).toEqual({ kind: 'conflict' });
    expect((await store.listEvents(MAIN, { limit: 10 }))?.map((e) => e.text)).toEqual(['one']);
  });

  it('scopes keys by hook path', async () => {
    const store = openStore();
    await committedOf(store, [wake('one')], claim('k1', 'hash-a'));
    const other = await store.accept([wake('two')], render, {
      ...claim('k1', 'hash-b'),
      scope: '/hooks/wake',
    });
    expect(other.kind).toBe('committed');
  });

  it('forgets a key after ttlMs: the request is then new work', async () => {
    const store = openStore();
    const ttlMs = 60_000;
    const first = await committedOf(store, [agent()], claim('k1', 'hash-a', T0, ttlMs));
    const stillThere = await store.accept([agent()], render, claim('k1', 'hash-a', T0 + ttlMs - 1, ttlMs));
    expect(stillThere.kind).toBe('replay');
    const expired = await committedOf(store, [agent()], claim('k1', 'hash-b', T0 + ttlMs, ttlMs));
    expect(expired.answer).not.toEqual(first.answer);
    // The new record replaces the old one and is replayed from now on.
    const replay = await store.accept([agent()], render, claim('k1', 'hash-b', T0 + ttlMs + 5, ttlMs));
    expect(replay).toEqual({ kind: 'replay', answer: expired.answer });
  });

  it('pruneIdempotency deletes records up to the given time and returns how many', async () => {
    const store = openStore();
    await committedOf(store, [wake('a')], claim('old', 'h', T0));
    await committedOf(store, [wake('b')], claim('edge', 'h', T0 + 10));
    await committedOf(store, [wake('c')], claim('new', 'h', T0 + 20));
    expect(await store.pruneIdempotency(T0 + 10)).toBe(2);
    expect(await store.pruneIdempotency(T0 + 10)).toBe(0);
    // Pruned keys are new work again; the kept one still replays.
    expect((await store.accept([wake('d')], render, claim('old', 'other', T0 + 30))).kind).toBe('committed');
    expect((await store.accept([wake('e')], render, claim('new', 'h', T0 + 30))).kind).toBe('replay');
  });
});

describe('listEvents paging', () => {
  async function seed(store: SqliteStore, n: number, sessionKey = MAIN): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const result = await committedOf(store, [wake(`event ${i}`, sessionKey, T0 + i)]);
      ids.push((result.committed[0] as { eventId: string }).eventId);
    }
    return ids;
  }

  it('returns the oldest first, honours limit and continues after a given id', async () => {
    const store = openStore();
    const ids = await seed(store, 7);
    await seed(store, 3, 'agent:ops:main');
    const page1 = await store.listEvents(MAIN, { limit: 3 });
    expect(page1?.map((e) => e.id)).toEqual(ids.slice(0, 3));
    const page2 = await store.listEvents(MAIN, { limit: 3, after: page1?.at(-1)?.id });
    expect(page2?.map((e) => e.id)).toEqual(ids.slice(3, 6));
    const page3 = await store.listEvents(MAIN, { limit: 3, after: page2?.at(-1)?.id });
    expect(page3?.map((e) => e.id)).toEqual(ids.slice(6));
    expect(await store.listEvents(MAIN, { limit: 3, after: ids[6] })).toEqual([]);
    expect((await store.listEvents(MAIN, { limit: 100 }))?.map((e) => e.text)).toEqual(
      ids.map((_, i) => `event ${i}`),
    );
  });

  it('answers undefined for an unknown after id, or an id of another session', async () => {
    const store = openStore();
    await seed(store, 2);
    const [otherId] = await seed(store, 1, 'agent:ops:main');
    expect(await store.listEvents(MAIN, { limit: 10, after: 'evt_unknown' })).toBeUndefined();
    expect(await store.listEvents(MAIN, { limit: 10, after: otherId })).toBeUndefined();
  });
});

describe('the database file', () => {
  it('keeps everything across a reopen, running migrations only once', async () => {
    const first = openStore();
    const wakeAction = wake('survives');
    const runAction = agent();
    await committedOf(first, [wakeAction, runAction], claim('k1', 'hash-a'));
    await closeStore(first);
    expect(existsSync(path)).toBe(true);

    const second = openStore();
    const eventId = (wakeAction as Extract<Action, { kind: 'wake' }>).event.id;
    const runId = (runAction as Extract<Action, { kind: 'agent' }>).run.id;
    expect((await second.listEvents(MAIN, { limit: 10 }))?.map((e) => [e.id, e.text])).toEqual([
      [eventId, 'survives'],
    ]);
    expect((await second.getRun(runId))?.status).toBe('queued');
    expect((await second.accept([agent()], render, claim('k1', 'hash-a'))).kind).toBe('replay');
    await closeStore(second);

    const third = openStore();
    expect((await third.getRun(runId))?.runId).toBe(runId);
    await closeStore(third);

    const raw = new Database(path, { readonly: true });
    expect(raw.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    const tables = raw
      .prepare(
        `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`,
      )
      .all();
    expect(tables.map((t) => (t as { name: string }).name)).toEqual([
      'budget_alerts',
      'budget_spend',
      'callbacks',
      'deliveries',
      'events',
      'heartbeats',
      'idempotency',
      'routes',
      'run_approvals',
      'run_attachments',
      'run_heads',
      'run_steps',
      'runs',
      'transcripts',
    ]);
    raw.close();
  });

  it('a file from before hook tokens (step 10) migrates: its runs and events read with tokenId null', async () => {
    mkdirSync(dirname(path), { recursive: true });
    const old = new Database(path);
    for (const step of MIGRATIONS.slice(0, 10)) old.exec(step);
    old.pragma('user_version = 10');
    old
      .prepare(
        `INSERT INTO runs (id, agent_id, session_key, main_session_key, message, timeout_seconds, wake_mode,
                           deliver, channel, allow_unsafe, source, created_at, delivery_status)
         VALUES ('run_old', 'main', 'hook:old', ?, 'm', 60, 'now', 0, 'last', 0, 'hook:agent', ?, 'none')`,
      )
      .run(MAIN, T0);
    old
      .prepare(
        `INSERT INTO events (id, session_key, ts, text, source, wake_mode) VALUES ('evt_old', ?, ?, 'old', 'hook:wake', 'now')`,
      )
      .run(MAIN, T0);
    old.close();

    const store = openStore();
    expect((await store.getRun('run_old'))?.tokenId).toBeNull();
    expect((await store.listEvents(MAIN, { limit: 10 }))?.map((e) => [e.id, e.tokenId])).toEqual([
      ['evt_old', null],
    ]);
    const tokened = agent({ tokenId: 'ci-bot' }) as Extract<Action, { kind: 'agent' }>;
    await committedOf(store, [tokened]);
    expect((await store.admin.listRuns({ limit: 10 }))?.runs.map((r) => [r.runId, r.tokenId])).toEqual([
      [tokened.run.id, 'ci-bot'],
      ['run_old', null],
    ]);
    expect((await store.admin.listRuns({ limit: 10, token: 'ci-bot' }))?.runs.map((r) => r.runId)).toEqual([
      tokened.run.id,
    ]);
  });

  it('uses WAL mode', async () => {
    const store = openStore();
    await committedOf(store, [wake('x')]);
    expect(existsSync(`${path}-wal`)).toBe(true);
    const raw = new Database(path);
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    raw.close();
  });

  it('has one writer: a second store on the file is refused, naming it, until the first closes', async () => {
    const first = openStore();
    await committedOf(first, [wake('first')]);
    expect(() => openStore()).toThrow(StoreInUseError);
    expect(() => openStore()).toThrow(
      `${path} is in use by another running agentgate (it holds ${path}.lock)`,
    );
    // The refused opens took nothing from the first: it still writes, and still holds the file.
    await committedOf(first, [wake('still first')]);
    expect(() => openStore()).toThrow(StoreInUseError);
    await closeStore(first);

    const second = openStore();
    expect((await second.listEvents(MAIN, { limit: 10 }))?.map((e) => e.text)).toEqual([
      'first',
      'still first',
    ]);
  });

  it('creates its folders 0700 and its files 0600 whatever the umask', async () => {
    path = join(dir, 'a', 'b', 'agentgate.db'); // two folders to create
    const previous = process.umask(0); // vitest runs this file in a forked process: umask is its own
    try {
      await committedOf(openStore(), [wake('x')]);
    } finally {
      process.umask(previous);
    }
    const mode = (p: string) => (statSync(p).mode & 0o777).toString(8);
    expect([mode(join(dir, 'a')), mode(join(dir, 'a', 'b'))]).toEqual(['700', '700']);
    const files = readdirSync(join(dir, 'a', 'b')).sort();
    expect(files).toEqual(['agentgate.db', 'agentgate.db-shm', 'agentgate.db-wal', 'agentgate.db.lock']);
    expect(files.map((name) => mode(join(dir, 'a', 'b', name)))).toEqual(['600', '600', '600', '600']);
  });

  it('a commit is visible to another connection at once (it is in the file, not in memory)', async () => {
    const store = openStore();
    const action = agent();
    await committedOf(store, [action]);
    const raw = new Database(path, { readonly: true });
    const row = raw.prepare('SELECT id, status FROM runs').get();
    raw.close();
    expect(row).toEqual({ id: (action as Extract<Action, { kind: 'agent' }>).run.id, status: 'queued' });
  });
});
