/**
 * The operators' lists stay indexed (docs/operating.md, "Admin API"): on SQLite
 * each list query, for every filter, walks an index newest first by seq and
 * stops at the page size — no full scan, no sort of the whole table ("TEMP
 * B-TREE"). Checked with EXPLAIN QUERY PLAN on a store holding 20 000 runs and
 * their deliveries, for every combination of status, source and hook token. An active status (queued, running) reads runs_active and
 * sorts what it holds: the backlog, not the table. A bulk retry's query (docs/operating.md, "Bulk retry")
 * reads runs_retryable in finish order and looks each run up in runs_by_retry_of.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUN_SUMMARY_COLUMNS } from '../../src/store/admin-rows.js';
import {
  deliveryListSql,
  retryableCountSql,
  retryableSql,
  runListSql,
} from '../../src/store/sqlite/admin.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { RunStatus } from '../../src/store/types.js';

const RUN_STATUSES: RunStatus[] = ['queued', 'running', 'succeeded', 'failed', 'timed_out'];
const ROWS = 20_000;

describe('SQLite list queries use an index for every filter', () => {
  let db: Database.Database;
  beforeAll(async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'agentgate-plans-')), 'state', 'agentgate.db');
    await new SqliteStore({ path }).close(); // migrated
    db = new Database(path);
    const insertRun = db.prepare(
      `INSERT INTO runs (id, status, agent_id, session_key, main_session_key, message, timeout_seconds, wake_mode,
                         deliver, channel, allow_unsafe, source, created_at, delivery_status, token_id,
                         finished_at, retry_of)
       VALUES (?, ?, 'main', ?, 'agent:main:main', 'm', 60, 'now', 1, 'telegram', 0, ?, ?, 'delivered', ?, ?, ?)`,
    );
    const insertDelivery = db.prepare(
      `INSERT INTO deliveries (id, kind, ref_id, main_session_key, channel, text, status, next_attempt_at, created_at, updated_at)
       VALUES (?, 'run', ?, 'agent:main:main', 'telegram', 'r', ?, 0, 0, 0)`,
    );
    db.transaction(() => {
      for (let i = 0; i < ROWS; i++) {
        // Mostly succeeded and delivered, as a live gateway's tables are; a few of everything else.
        const status =
          i % 100 === 0 ? 'failed' : i % 250 === 0 ? 'timed_out' : i > ROWS - 20 ? 'queued' : 'succeeded';
        // Most runs by the classic token, a few by a sender of their own, some (retries) by none.
        const token = i % 40 === 0 ? 'rare-bot' : i % 7 === 0 ? null : 'default';
        // Finished runs finish in order; every third failed run was retried by the run after it.
        const finishedAt = status === 'queued' ? null : i + 1;
        const retryOf = (i - 1) % 300 === 0 ? `run_${i - 1}` : null;
        insertRun.run(
          `run_${i}`,
          status,
          `hook:${i}`,
          i % 50 === 0 ? 'hook:rare' : 'hook:agent',
          i,
          token,
          finishedAt,
          retryOf,
        );
        insertDelivery.run(
          `dlv_${i}`,
          `run_${i}`,
          i % 100 === 0 ? 'failed' : i > ROWS - 10 ? 'pending' : 'delivered',
        );
      }
    })();
    db.exec('ANALYZE');
  });
  afterAll(() => db?.close());

  const plan = (sql: string, params: unknown[]) =>
    db
      .prepare(`EXPLAIN QUERY PLAN ${sql}`)
      .all(...params)
      .map((row) => (row as { detail: string }).detail)
      .join(' | ');

  const runCases = [undefined, ...RUN_STATUSES].flatMap((status) =>
    [false, true].flatMap((bySource) => [false, true].map((byToken) => ({ status, bySource, byToken }))),
  );

  it.each(runCases)(
    'runs: status $status, by source $bySource, by token $byToken',
    ({ status, bySource, byToken }) => {
      const params = [
        Number.MAX_SAFE_INTEGER,
        ...(bySource ? ['hook:rare'] : []),
        ...(byToken ? ['rare-bot'] : []),
        51,
      ];
      const sql = runListSql(status, bySource, byToken);
      const detail = plan(sql, params);
      if (status === 'queued' || status === 'running') {
        // Read from runs_active (queued and running rows only), whose IN loop leaves the
        // order to a sort: the cost follows the backlog, not the table.
        if (!bySource && !byToken) expect(detail).toMatch(/USING INDEX runs_active/);
      } else {
        expect(detail).not.toMatch(/TEMP B-TREE/);
      }
      // The token alone reads runs_by_token (partial: runs with a token), not the whole table.
      if (byToken && !bySource && status === undefined) expect(detail).toMatch(/USING INDEX runs_by_token/);
      expect(detail).toMatch(/USING (INTEGER PRIMARY KEY|INDEX|COVERING INDEX)/);
      // Every row read is one it keeps, or close to it: a page costs milliseconds, not a scan.
      const started = performance.now();
      for (let i = 0; i < 20; i++) db.prepare(sql).all(...params);
      expect((performance.now() - started) / 20, detail).toBeLessThan(20);
      // The summary view (excerpts of the texts) reads the runs the same way.
      expect(plan(runListSql(status, bySource, byToken, RUN_SUMMARY_COLUMNS), params)).toBe(detail);
    },
  );

  it.each([
    { status: 'failed', bySource: false },
    { status: 'failed', bySource: true },
    { status: 'timed_out', bySource: false },
    { status: 'timed_out', bySource: true },
  ] as const)('bulk retry: status $status, by source $bySource', ({ status, bySource }) => {
    const where = [1000, 15_000, ...(bySource ? ['hook:rare'] : [])];
    const detail = plan(retryableSql(status, bySource), [...where, 101]);
    expect(detail).toMatch(/USING INDEX runs_retryable/);
    expect(detail).toMatch(/runs_by_retry_of/);
    // By source, SQLite may sort what it kept: that status's runs of the window and source, not the table.
    if (!bySource) expect(detail).not.toMatch(/TEMP B-TREE/);
    expect(detail).not.toMatch(/SCAN r\b/);
    expect(plan(retryableCountSql(status, bySource), where)).toMatch(/USING INDEX runs_retryable/);
    const found = db.prepare(retryableSql(status, bySource)).all(...where, 101) as { id: string }[];
    // failed: runs 1000, 1100, … 14 900, without the retried 1200, 1500, …
    if (status === 'failed' && !bySource) {
      expect(found).toHaveLength(140 - 46);
      expect(found.slice(0, 3).map((row) => row.id)).toEqual(['run_1000', 'run_1100', 'run_1300']);
    }
  });

  it.each([undefined, 'pending', 'delivered', 'failed'] as const)('deliveries: status %s', (status) => {
    const sql = deliveryListSql(status);
    const detail = plan(sql, [51]);
    // `SCAN deliveries` alone is the walk in rowid (seq) order, stopping at the limit.
    expect(detail).toMatch(/USING (INTEGER PRIMARY KEY|INDEX|COVERING INDEX)|^SCAN deliveries$/);
    if (status !== 'pending') expect(detail).not.toMatch(/TEMP B-TREE/); // pending ones are few: sorted
    if (status === 'failed') expect(detail).toMatch(/deliveries_failed/);
    // One run's: its own rows through deliveries_by_ref, newest first without a sort.
    const byRun = plan(deliveryListSql(status, true), ['run_100', 51]);
    expect(byRun).toMatch(/USING INDEX deliveries_by_ref \(ref_id=\?\)/);
    expect(byRun).not.toMatch(/TEMP B-TREE/);
    expect(db.prepare(deliveryListSql(status, true)).all('run_100', 51)).toHaveLength(
      status === undefined || status === 'failed' ? 1 : 0,
    );
  });
});
