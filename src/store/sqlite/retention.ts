/**
 * Retention on SQLite: one batch per call, in one IMMEDIATE transaction, by the
 * rules of store/retention-rules.ts. The engine that calls it yields between
 * batches, so the accepts' group commits get the write lock in between and the
 * ingress keeps answering while a large backlog is pruned.
 *
 * The file stops growing under steady load without VACUUM: with SQLite's
 * default auto_vacuum (NONE), the pages a delete frees go on the freelist and
 * the next inserts reuse them. The WAL is bounded by the store's checkpointer
 * thread (wal-checkpointer.ts): it gets the WAL started over once it holds
 * 2048 pages, and a longer file is truncated back to `journal_size_limit` then.
 */
import type Database from 'better-sqlite3';
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
import { BOUND_LIMIT } from './bound-limit.js';

type Keyed = { seq: number; id: string };

export class SqliteRetention {
  private readonly s;

  constructor(
    private readonly db: Database.Database,
    /** Told after a batch deleted transcript entries (sessions cache the newest ones). */
    private readonly onTranscriptsPruned: () => void = () => {},
  ) {
    this.s = {
      runs: db.prepare<[number, number], Keyed>(prunableRunsSql('?', BOUND_LIMIT)),
      runDeliveries: db.prepare(
        `DELETE FROM deliveries WHERE ref_id = ? AND kind = 'run' AND ${SETTLED_DELIVERY}`,
      ),
      runCallback: db.prepare(`DELETE FROM callbacks WHERE run_id = ? AND ${SETTLED_CALLBACK}`),
      run: db.prepare('DELETE FROM runs WHERE seq = ?'),
      runParts: RUN_PART_TABLES.map((table) => db.prepare(`DELETE FROM ${table} WHERE run_id = ?`)),
      transcripts: db.prepare(
        `DELETE FROM transcripts WHERE seq IN (${prunableTranscriptSql('?', BOUND_LIMIT)})`,
      ),
      events: db.prepare(`DELETE FROM events WHERE seq IN (${prunableEventsSql('?', BOUND_LIMIT)})`),
      heartbeats: db.prepare<[number, number], Keyed>(prunableHeartbeatsSql('?', BOUND_LIMIT)),
      heartbeatDeliveries: db.prepare(
        `DELETE FROM deliveries WHERE ref_id = ? AND kind = 'heartbeat' AND ${SETTLED_DELIVERY}`,
      ),
      heartbeat: db.prepare('DELETE FROM heartbeats WHERE seq = ?'),
      spend: db.prepare(PRUNE_SPEND('?')),
      budgetAlerts: db.prepare(PRUNE_BUDGET_ALERTS('?')),
    };
  }

  async pruneBatch(kind: PruneKind, olderThan: number, limit: number): Promise<PruneBatch> {
    if (kind === 'events') return this.db.transaction(this.eventsBatch).immediate(olderThan, limit);
    const { batch, transcripts } = this.db.transaction(this.runsBatch).immediate(olderThan, limit);
    if (transcripts > 0) this.onTranscriptsPruned();
    return batch;
  }

  /** Finished runs with their outbox rows and callback, and transcript entries, each up to `limit`. */
  private readonly runsBatch = (
    olderThan: number,
    limit: number,
  ): { batch: PruneBatch; transcripts: number } => {
    const runs = this.s.runs.all(olderThan, limit);
    for (const run of runs) {
      this.s.runDeliveries.run(run.id);
      this.s.runCallback.run(run.id);
      for (const part of this.s.runParts) part.run(run.id);
      this.s.run.run(run.seq);
    }
    const transcripts = this.s.transcripts.run(olderThan, limit).changes;
    // Budgets' counters and alert claims of windows over before the horizon: a handful of rows a day.
    this.s.spend.run(olderThan);
    this.s.budgetAlerts.run(olderThan);
    return {
      batch: { deleted: runs.length, more: runs.length === limit || transcripts === limit },
      transcripts,
    };
  };

  /** Consumed events, and finished heartbeats with their outbox rows, each up to `limit`. */
  private readonly eventsBatch = (olderThan: number, limit: number): PruneBatch => {
    const events = this.s.events.run(olderThan, limit).changes;
    const heartbeats = this.s.heartbeats.all(olderThan, limit);
    for (const heartbeat of heartbeats) {
      this.s.heartbeatDeliveries.run(heartbeat.id);
      this.s.heartbeat.run(heartbeat.seq);
    }
    return { deleted: events, more: events === limit || heartbeats.length === limit };
  };
}
