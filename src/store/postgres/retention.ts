/**
 * Retention on PostgreSQL: one batch per call, by the rules of
 * store/retention-rules.ts, in one transaction of a few statements that
 * select their rows by an indexed age column and delete them by primary key.
 *
 * One prune at a time across replicas: each batch first takes a
 * transaction-level advisory lock with `pg_try_advisory_xact_lock`; a replica
 * that finds it taken ends its pass at once (another replica is pruning), so
 * replicas never queue up behind each other's deletes nor fight over the same
 * rows. Candidate runs and heartbeats are also locked `SKIP LOCKED`, so a row
 * another transaction is changing right now (a redelivery) waits for the next pass.
 *
 * Bloat: a delete leaves dead tuples that autovacuum reclaims for reuse. Small
 * batches spread over the interval keep each vacuum's work small and never hold
 * locks long; the table then settles at its live size plus the dead tuples of
 * about one autovacuum threshold (20 % by default), instead of growing.
 */

import type pg from 'pg';
import {
  prunableEventsSql,
  prunableHeartbeatsSql,
  prunableRunsSql,
  prunableTranscriptSql,
  RUN_PART_TABLES,
  SETTLED_CALLBACK,
  SETTLED_DELIVERY,
} from '../retention-rules.js';
import { PRUNE_BUDGET_ALERTS, PRUNE_SPEND } from '../rules/budgets.js';
import type { PruneBatch, PruneKind } from '../types.js';
import { inTransaction, type Tx } from './db.js';

/** Arbitrary constant naming agentgate's retention lock among other advisory locks. */
export const RETENTION_LOCK_KEY = 0x61676772; // "aggr"

/** Finished runs, their outbox rows, their callback, their files and steps, in one statement; counts the runs. */
const PRUNE_RUNS = `
  WITH doomed AS (${prunableRunsSql('$1', '$2')} FOR UPDATE OF r SKIP LOCKED),
  deliveries_gone AS (
    DELETE FROM deliveries WHERE kind = 'run' AND ref_id IN (SELECT id FROM doomed) AND ${SETTLED_DELIVERY}),
  callbacks_gone AS (
    DELETE FROM callbacks WHERE run_id IN (SELECT id FROM doomed) AND ${SETTLED_CALLBACK}),
${RUN_PART_TABLES.map(
  (table) => `  ${table}_gone AS (DELETE FROM ${table} WHERE run_id IN (SELECT id FROM doomed)),
`,
).join('')}  runs_gone AS (DELETE FROM runs WHERE seq IN (SELECT seq FROM doomed) RETURNING 1)
  SELECT count(*)::int AS n FROM runs_gone`;

const PRUNE_TRANSCRIPTS = `DELETE FROM transcripts WHERE seq IN (${prunableTranscriptSql('$1', '$2')})`;

const PRUNE_EVENTS = `DELETE FROM events WHERE seq IN (${prunableEventsSql('$1', '$2')})`;

/** Finished heartbeats with their outbox rows; counts the heartbeats. */
const PRUNE_HEARTBEATS = `
  WITH doomed AS (${prunableHeartbeatsSql('$1', '$2')} FOR UPDATE OF h SKIP LOCKED),
  deliveries_gone AS (
    DELETE FROM deliveries WHERE kind = 'heartbeat' AND ref_id IN (SELECT id FROM doomed) AND ${SETTLED_DELIVERY}),
  heartbeats_gone AS (DELETE FROM heartbeats WHERE seq IN (SELECT seq FROM doomed) RETURNING 1)
  SELECT count(*)::int AS n FROM heartbeats_gone`;

export class PgRetention {
  constructor(private readonly pool: pg.Pool) {}

  async pruneBatch(kind: PruneKind, olderThan: number, limit: number): Promise<PruneBatch> {
    return inTransaction(this.pool, async (tx) => {
      const { rows } = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [
        RETENTION_LOCK_KEY,
      ]);
      if (!rows[0]?.locked) return { deleted: 0, more: false };
      return kind === 'runs' ? runsBatch(tx, olderThan, limit) : eventsBatch(tx, olderThan, limit);
    });
  }
}

async function runsBatch(tx: Tx, olderThan: number, limit: number): Promise<PruneBatch> {
  const runs = await count(tx, PRUNE_RUNS, [olderThan, limit]);
  const transcripts = (await tx.query(PRUNE_TRANSCRIPTS, [olderThan, limit])).rowCount ?? 0;
  // Budgets' counters and alert claims of windows over before the horizon: a handful of rows a day.
  await tx.query(PRUNE_SPEND('$1'), [olderThan]);
  await tx.query(PRUNE_BUDGET_ALERTS('$1'), [olderThan]);
  return { deleted: runs, more: runs === limit || transcripts === limit };
}

async function eventsBatch(tx: Tx, olderThan: number, limit: number): Promise<PruneBatch> {
  const events = (await tx.query(PRUNE_EVENTS, [olderThan, limit])).rowCount ?? 0;
  const heartbeats = await count(tx, PRUNE_HEARTBEATS, [olderThan, limit]);
  return { deleted: events, more: events === limit || heartbeats === limit };
}

async function count(tx: Tx, sql: string, values: unknown[]): Promise<number> {
  const { rows } = await tx.query<{ n: number }>(sql, values);
  return rows[0]?.n ?? 0;
}
