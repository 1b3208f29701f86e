/**
 * Store conformance for the run list's summary view (docs/operating.md, "The run list's summary
 * view"), the same tests for every driver (drivers.ts): each run of the page as `listRuns` gives
 * it, with the first line of its reply and of its error in place of the texts, and the query
 * itself never selecting the reply or the error column whole — so a page of runs with 320 KiB
 * replies moves a few KiB out of the database, not megabytes.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RUN_SUMMARY_COLUMNS } from '../../src/store/admin-rows.js';
import type { PgStore } from '../../src/store/postgres/pg-store.js';
import { runListSql } from '../../src/store/sqlite/admin.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { NewRun, RunCompletion, Store } from '../../src/store/types.js';
import { tempDir } from '../helpers/gateway.js';
import { DRIVERS } from './drivers.js';

const MAIN = 'agent:main:main';
const T0 = Date.UTC(2025, 0, 2, 3, 4, 5);
const KIB = 1024;
let counter = 0;
const nextId = (prefix: string) => `${prefix}_rs${String(++counter).padStart(6, '0')}`;

/** A reply as a model writes a long report: a title line, then 320 KiB of body. */
const bigReply = (title: string) =>
  `${title}\n\n${'All checks passed; nothing to report. '.repeat((320 * KIB) / 38)}`;

function agent(): NewRun {
  return {
    id: nextId('run'),
    agentId: 'main',
    sessionKey: nextId('hook:rs'),
    mainSessionKey: MAIN,
    name: 'Report',
    message: 'm',
    model: null,
    thinking: null,
    timeoutSeconds: 600,
    wakeMode: 'now',
    deliver: false,
    channel: 'last',
    to: null,
    allowUnsafeExternalContent: false,
    source: 'hook:agent',
    createdAt: T0 + counter,
  };
}

function completion(run: NewRun, texts: Pick<RunCompletion, 'status' | 'reply' | 'error'>): RunCompletion {
  return {
    runId: run.id,
    owner: 'worker',
    sessionKey: run.sessionKey,
    ...texts,
    finishedAt: T0 + 60_000,
    transcript: [],
    summary: {
      id: nextId('evt'),
      sessionKey: MAIN,
      text: 'Report: done',
      source: `run:${run.id}`,
      wakeMode: 'next-heartbeat',
      ts: T0 + 60_000,
    },
    delivery: { status: 'none', channel: null, to: null, reason: null },
  };
}

/** Accepts `run`, claims it and records its end with `texts`. */
async function finished(store: Store, texts: Pick<RunCompletion, 'status' | 'reply' | 'error'>) {
  const run = agent();
  await store.accept([{ kind: 'agent', run }], () => ({ status: 202, body: '{}' }));
  const [claimed] = await store.runs.claimRuns('worker', T0, 60_000, 1);
  expect(claimed?.id).toBe(run.id);
  expect(await store.runs.completeRun(completion(run, texts))).toBe(true);
  return run.id;
}

describe.each(DRIVERS)('run list summaries: $name', (driver) => {
  let store: Store;
  beforeAll(() => driver.setup(), 30_000);
  afterAll(() => driver.teardown(), 30_000);
  beforeEach(async () => {
    await driver.reset();
    store = driver.open();
  });
  afterEach(() => driver.closeAll());

  it('gives every run of the page as the list does, with excerpts of its reply and error in place of the texts', async () => {
    const long = 'x'.repeat(250);
    const ids = {
      big: await finished(store, {
        status: 'succeeded',
        reply: bigReply('Nightly report: green'),
        error: null,
      }),
      short: await finished(store, { status: 'succeeded', reply: '  Done.  \n', error: null }),
      longLine: await finished(store, { status: 'succeeded', reply: long, error: null }),
      failed: await finished(store, {
        status: 'failed',
        reply: null,
        error: `openai: 400 bad request\n${'trace line\n'.repeat(5000)}`,
      }),
    };
    const queued = agent();
    await store.accept([{ kind: 'agent', run: queued }], () => ({ status: 202, body: '{}' }));

    const full = await store.admin.listRuns({ limit: 10 });
    const summaries = await store.admin.listRunSummaries({ limit: 10 });
    expect(summaries?.next).toBeNull();
    expect(summaries?.runs.map((run) => run.runId)).toEqual(full?.runs.map((run) => run.runId));
    // Everything the list gives but the two texts, the same.
    for (const [i, run] of (full?.runs ?? []).entries()) {
      const { reply: _reply, error: _error, ...facts } = run;
      const { replyExcerpt: _r, errorExcerpt: _e, ...summaryFacts } = summaries?.runs[i] ?? {};
      expect(summaryFacts).toEqual(facts);
      expect(summaries?.runs[i]).not.toHaveProperty('reply');
      expect(summaries?.runs[i]).not.toHaveProperty('error');
    }
    const excerpts = Object.fromEntries(
      (summaries?.runs ?? []).map((run) => [run.runId, [run.replyExcerpt, run.errorExcerpt]]),
    );
    expect(excerpts).toEqual({
      [ids.big]: ['Nightly report: green…', null],
      [ids.short]: ['Done.', null],
      [ids.longLine]: [`${'x'.repeat(200)}…`, null],
      [ids.failed]: [null, 'openai: 400 bad request…'],
      [queued.id]: [null, null],
    });
    // Paging and filters as the list's.
    const page = await store.admin.listRunSummaries({ limit: 2, status: 'succeeded' });
    expect(page?.runs.map((run) => run.runId)).toEqual([ids.longLine, ids.short]);
    expect(page?.next).toBe(ids.short);
    const older = await store.admin.listRunSummaries({
      limit: 2,
      status: 'succeeded',
      before: page?.next ?? '',
    });
    expect(older?.runs.map((run) => run.runId)).toEqual([ids.big]);
    expect(await store.admin.listRunSummaries({ limit: 2, before: 'run_unknown' })).toBeUndefined();
    // The run itself still has its reply whole.
    expect((await store.getRun(ids.big))?.reply).toBe(bigReply('Nightly report: green'));
  });

  it('reads no reply or error whole: a page of 20 runs with 320 KiB replies moves a few KiB out of the database', async () => {
    if (driver.name === 'postgres') {
      for (let i = 0; i < 20; i++) await finished(store, bigRun(i));
      const pool = (store as PgStore).pool;
      const moved = await rowBytesOf(pool, () => store.admin.listRunSummaries({ limit: 20 }));
      expect(moved.rows).toBe(20);
      expect(moved.bytes).toBeLessThan(20 * 2 * KIB);
      // The whole list, for scale: what the summary view spares.
      expect((await rowBytesOf(pool, () => store.admin.listRuns({ limit: 20 }))).bytes).toBeGreaterThan(
        20 * 320 * KIB,
      );
      // No column of the summary's answer is the reply or the error column itself.
      const columns = await pool.query(
        `SELECT attnum FROM pg_attribute WHERE attrelid = 'runs'::regclass AND attname IN ('reply', 'error')`,
      );
      const texts = columns.rows.map((row) => Number(row.attnum));
      expect(texts).toHaveLength(2);
      const answer = await pool.query(`SELECT ${RUN_SUMMARY_COLUMNS} FROM runs LIMIT 1`);
      expect(answer.fields.filter((field) => texts.includes(field.columnID))).toEqual([]);
    } else {
      // A store whose file this test knows, read with the driver's own query on a second connection.
      const path = join(tempDir('agentgate-summaries-'), 'state', 'agentgate.db');
      const own = new SqliteStore({ path });
      const db = new Database(path, { readonly: true });
      try {
        for (let i = 0; i < 20; i++) await finished(own, bigRun(i));
        const statement = db.prepare(runListSql(undefined, false, false, RUN_SUMMARY_COLUMNS));
        const origins = statement.columns().map((column) => column.column);
        expect(origins).toContain('id');
        expect(origins).not.toContain('reply');
        expect(origins).not.toContain('error');
        const rows = statement.all(Number.MAX_SAFE_INTEGER, 20);
        expect(rows).toHaveLength(20);
        expect(JSON.stringify(rows).length).toBeLessThan(20 * 2 * KIB);
      } finally {
        db.close();
        await own.close();
      }
    }
  });
});

const bigRun = (i: number) => ({ status: 'succeeded' as const, reply: bigReply(`Report ${i}`), error: null });

/** The rows `action` read through `pool`, and their size as JSON. */
async function rowBytesOf(pool: pg.Pool, action: () => Promise<unknown>) {
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<pg.QueryResult>;
  let rows = 0;
  let bytes = 0;
  const spy = pool as unknown as { query: (...args: unknown[]) => Promise<pg.QueryResult> };
  spy.query = async (...args: unknown[]) => {
    const result = await query(...args);
    rows += result.rows.length;
    bytes += JSON.stringify(result.rows).length;
    return result;
  };
  try {
    await action();
  } finally {
    spy.query = query;
  }
  return { rows, bytes };
}
