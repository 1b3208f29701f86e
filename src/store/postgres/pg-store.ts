/**
 * The scale-out store: any number of replicas on one PostgreSQL database
 * (CONTRACT §11). It implements the same Store as SQLite; what differs is said
 * where it differs.
 *
 * Start: the pool connects and `migrate` brings the schema up to date under an
 * advisory lock. Every method waits for that; if the database cannot be reached
 * the first call fails with an error naming `store.url` (the CLI exits 1).
 *
 * Group commit (store/rules/group-commit.ts): accepts that arrive in the same
 * event-loop turn are committed in one transaction — their runs in one
 * multi-row INSERT — and the batch sends one NOTIFY, not one per row (NOTIFY
 * serialises commits server-wide). Should the batch fail, it is rolled back
 * whole and replayed one accept per transaction, as on SQLite.
 *
 * Idempotency holds across replicas through the (scope, key) primary key: an
 * accept first inserts its key with ON CONFLICT DO NOTHING; a second replica
 * sending the same key at the same moment blocks on that row until the first
 * commits, then reads and replays its answer (the same runId).
 */

import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { iso, type RunRow, toRunView } from '../rows.js';
import { GroupCommit } from '../rules/group-commit.js';
import {
  type AcceptResult,
  type Action,
  type AdminStore,
  type CallbackOutboxStore,
  type Committed,
  type DeliveryOutboxStore,
  type EventView,
  type IdempotencyClaim,
  type ListEventsOptions,
  type NewEvent,
  type NewRun,
  type PruneBatch,
  type PruneKind,
  type RunQueueStore,
  type RunView,
  type SessionStore,
  type Store,
  type StoreCounts,
  type StoredAnswer,
  StoreUnavailableError,
} from '../types.js';
import { PgAdmin } from './admin.js';
import { afterReady } from './after-ready.js';
import { insertCallbacksInTx, PgCallbacks, pruneCallbacksInTx } from './callbacks.js';
import { createPool, inTransaction, type PoolSettings, read, type Tx } from './db.js';
import { PgLockoutLedger } from './lockout-ledger.js';
import { migrate } from './migrations.js';
import { PgOutbox } from './outbox.js';
import { redactUrl } from './redact-url.js';
import { PgRetention } from './retention.js';
import { PgRunQueue } from './run-queue.js';
import { consumeEventsInTx, PgSessions } from './sessions.js';
import { WORK_CHANNEL, WorkListener } from './work-listener.js';

export interface PgStoreOptions extends PoolSettings {
  /** Lease of an outbox item held by this replica (ms); expires if the replica dies. */
  deliveryLeaseMs?: number;
  clock?: () => number;
}

/** The database at `store.url` could not be reached or migrated at start. */
export class StoreStartError extends Error {}

interface PendingAccept {
  actions: Action[];
  render: (committed: Committed[]) => StoredAnswer;
  idempotency: IdempotencyClaim | undefined;
}

/** Finished outbox rows live this long past the idempotency window (24 h): a week in all. */
const FINISHED_DELIVERY_EXTRA_MS = 6 * 24 * 3600_000;

const INSERT_RUNS = `
  INSERT INTO runs (id, agent_id, session_key, main_session_key, name, message, model, thinking,
                    timeout_seconds, wake_mode, deliver, channel, recipient, allow_unsafe, source, created_at,
                    delivery_status, delivery_channel, delivery_to, retry_of)
  SELECT id, agent_id, session_key, main_session_key, name, message, model, thinking, timeout_seconds, wake_mode,
         deliver, channel, recipient, allow_unsafe, source, created_at, delivery_status, delivery_channel, delivery_to,
         retry_of
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                       $8::text[], $9::float8[], $10::text[], $11::bool[], $12::text[], $13::text[], $14::bool[],
                       $15::text[], $16::int8[], $17::text[], $18::text[], $19::text[], $20::text[])
         WITH ORDINALITY AS t(id, agent_id, session_key, main_session_key, name, message, model, thinking,
                    timeout_seconds, wake_mode, deliver, channel, recipient, allow_unsafe, source, created_at,
                    delivery_status, delivery_channel, delivery_to, retry_of, n)
   ORDER BY n
  RETURNING session_key, seq, source`;

/** Inserts the runs, and makes each its key's head when the key has none (heads only move on completion). */
const INSERT_RUNS_AND_HEADS = `
  WITH inserted AS (${INSERT_RUNS})
  INSERT INTO run_heads (session_key, seq, source)
  SELECT DISTINCT ON (session_key) session_key, seq, source FROM inserted ORDER BY session_key, seq
  ON CONFLICT (session_key) DO NOTHING`;

function runColumns(runs: readonly NewRun[]): unknown[][] {
  const pick = <T>(f: (run: NewRun) => T) => runs.map(f);
  return [
    pick((r) => r.id),
    pick((r) => r.agentId),
    pick((r) => r.sessionKey),
    pick((r) => r.mainSessionKey),
    pick((r) => r.name),
    pick((r) => r.message),
    pick((r) => r.model),
    pick((r) => r.thinking),
    pick((r) => r.timeoutSeconds),
    pick((r) => r.wakeMode),
    pick((r) => r.deliver),
    pick((r) => r.channel),
    pick((r) => r.to),
    pick((r) => r.allowUnsafeExternalContent),
    pick((r) => r.source),
    pick((r) => r.createdAt),
    pick((r) => (r.deliver ? 'pending' : 'none')),
    pick((r) => (r.deliver ? r.channel : null)),
    pick((r) => (r.deliver ? r.to : null)),
    pick((r) => r.retryOf ?? null),
  ];
}

export class PgStore implements Store {
  readonly pool: pg.Pool;
  /** Settles once the schema is up to date; every method waits for it. */
  readonly ready: Promise<void>;
  /**
   * Accepts arriving while a transaction is open wait and go together in the
   * next one: parallel small transactions would only queue on the same session
   * locks and cost a commit each.
   */
  private readonly accepts: GroupCommit<PendingAccept, AcceptResult>;
  private closed = false;
  // Each part waits for the schema before its first query (after-ready.ts).
  readonly sessions: SessionStore;
  readonly runs: RunQueueStore;
  readonly outbox: DeliveryOutboxStore;
  readonly callbacks: CallbackOutboxStore;
  readonly admin: AdminStore;
  /** The run queue itself, for close (its group commit drains). */
  private readonly runQueue: PgRunQueue;
  private readonly retention: PgRetention;
  private readonly listener: WorkListener;
  readonly lockouts: PgLockoutLedger;

  constructor(options: PgStoreOptions) {
    this.pool = createPool(options);
    this.ready = this.start(options.url);
    this.ready.catch(() => {}); // reported by the first call that waits for it
    this.accepts = new GroupCommit(
      async (batch) => {
        await this.ready;
        return inTransaction(this.pool, (tx) => this.acceptBatch(tx, batch));
      },
      {
        wrapError: (error) =>
          error instanceof StoreUnavailableError ? error : new StoreUnavailableError(error),
      },
    );
    this.listener = new WorkListener(options.url);
    this.lockouts = new PgLockoutLedger(this.pool, this.listener, this.ready);
    this.sessions = afterReady(this.ready, new PgSessions(this.pool));
    this.runQueue = new PgRunQueue(this.pool);
    this.runs = afterReady(this.ready, this.runQueue);
    this.callbacks = afterReady(this.ready, new PgCallbacks(this.pool));
    this.admin = afterReady(this.ready, new PgAdmin(this.pool));
    this.retention = new PgRetention(this.pool);
    this.outbox = afterReady(
      this.ready,
      new PgOutbox(this.pool, {
        owner: `pg_${randomUUID()}`,
        leaseMs: options.deliveryLeaseMs ?? 60_000,
        clock: options.clock ?? Date.now,
      }),
    );
  }

  private async start(url: string): Promise<void> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw new StoreStartError(
        `store.url: cannot connect to PostgreSQL at ${redactUrl(url)}: ${(error as Error).message || (error as { code?: string }).code}`,
      );
    }
    try {
      await migrate(client);
    } catch (error) {
      throw new StoreStartError(
        `store.url: cannot create or migrate the schema at ${redactUrl(url)}: ${(error as Error).message}`,
      );
    } finally {
      client.release();
    }
  }

  accept(
    actions: Action[],
    render: (committed: Committed[]) => StoredAnswer,
    idempotency?: IdempotencyClaim,
  ): Promise<AcceptResult> {
    if (this.closed) return Promise.reject(new StoreUnavailableError(new Error('the store is closed')));
    return this.accepts.submit({ actions, render, idempotency });
  }

  private async acceptBatch(tx: Tx, batch: readonly PendingAccept[]): Promise<AcceptResult[]> {
    // 1. Idempotency keys, in order; a key used twice in one batch replays its first use.
    const results: (AcceptResult | undefined)[] = [];
    const firstUse = new Map<string, number>();
    const repeats = new Map<number, number>();
    for (const [index, item] of batch.entries()) {
      const claim = item.idempotency;
      const id = claim && `${claim.scope}\u0000${claim.key}`;
      const of = id === undefined ? undefined : firstUse.get(id);
      if (of !== undefined) repeats.set(index, of);
      const earlier = claim && of === undefined ? await this.claimKey(tx, claim) : undefined;
      if (id !== undefined && of === undefined && !earlier) firstUse.set(id, index);
      results.push(earlier);
    }
    const fresh = batch.map((_, i) => results[i] === undefined && !repeats.has(i));

    // 2. Wakes: one lock and one read per session for the whole batch, coalescing decided here.
    const newest = await this.newestPending(
      tx,
      batch.flatMap((item, i) =>
        fresh[i] ? item.actions.flatMap((a) => (a.kind === 'wake' ? [a.event.sessionKey] : [])) : [],
      ),
    );
    const events: NewEvent[] = [];
    const runs: NewRun[] = [];
    const answered: { claim: IdempotencyClaim; answer: StoredAnswer }[] = [];
    for (const [i, item] of batch.entries()) {
      if (!fresh[i]) continue;
      const committed = item.actions.map((action): Committed => {
        if (action.kind === 'agent') {
          runs.push(action.run);
          return { kind: 'agent', runId: action.run.id };
        }
        const { event } = action;
        const last = newest.get(event.sessionKey);
        if (last && last.text === event.text) return { kind: 'wake', eventId: last.id, outcome: 'coalesced' };
        events.push(event);
        newest.set(event.sessionKey, { id: event.id, text: event.text });
        return { kind: 'wake', eventId: event.id, outcome: 'queued' };
      });
      const answer = item.render(committed);
      results[i] = { kind: 'committed', committed, answer };
      if (item.idempotency) answered.push({ claim: item.idempotency, answer });
    }
    for (const [index, of] of repeats) {
      const first = results[of] as AcceptResult;
      const same = batch[index]?.idempotency?.bodyHash === batch[of]?.idempotency?.bodyHash;
      results[index] =
        same && first.kind !== 'conflict' ? { kind: 'replay', answer: first.answer } : { kind: 'conflict' };
    }

    // 3. The writes: a statement each, whatever the batch size.
    if (answered.length > 0) {
      await tx.query(
        `UPDATE idempotency i SET status = u.status, body = u.body
           FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) AS u(scope, key, status, body)
          WHERE i.scope = u.scope AND i.key = u.key`,
        [
          answered.map((a) => a.claim.scope),
          answered.map((a) => a.claim.key),
          answered.map((a) => a.answer.status),
          answered.map((a) => a.answer.body),
        ],
      );
    }
    if (events.length > 0) {
      await tx.query(
        `INSERT INTO events (id, session_key, ts, text, source, wake_mode)
         SELECT id, session_key, ts, text, source, wake_mode
           FROM unnest($1::text[], $2::text[], $3::int8[], $4::text[], $5::text[], $6::text[])
                WITH ORDINALITY AS t(id, session_key, ts, text, source, wake_mode, n)
          ORDER BY n`,
        [
          events.map((e) => e.id),
          events.map((e) => e.sessionKey),
          events.map((e) => e.ts),
          events.map((e) => e.text),
          events.map((e) => e.source),
          events.map((e) => e.wakeMode),
        ],
      );
    }
    if (runs.length > 0) {
      // The keys' locks order this insert against completions (which move the heads), and
      // the one NOTIFY of the batch reaches every replica's listener at commit.
      await tx.query(
        `SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))), pg_notify('${WORK_CHANNEL}', '')
           FROM unnest($1::text[]) AS k`,
        [[...new Set(runs.map((r) => r.sessionKey))].sort()],
      );
      await tx.query(INSERT_RUNS_AND_HEADS, runColumns(runs));
      await insertCallbacksInTx(tx, runs);
    }
    return results as AcceptResult[];
  }

  /**
   * The newest pending event of each session, read under the sessions' locks
   * (taken in sorted order), so coalescing sees every replica's wakes.
   */
  private async newestPending(
    tx: Tx,
    sessionKeys: string[],
  ): Promise<Map<string, { id: string; text: string }>> {
    const newest = new Map<string, { id: string; text: string }>();
    if (sessionKeys.length === 0) return newest;
    const keys = [...new Set(sessionKeys)].sort();
    await tx.query(
      'SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) FROM unnest($1::text[]) AS k',
      [keys],
    );
    const { rows } = await tx.query<{ session_key: string; id: string; text: string }>(
      // LATERAL … LIMIT 1 reads one index entry per session; DISTINCT ON would read
      // every pending event of the session (no skip scan), which grows with the backlog.
      `SELECT k AS session_key, e.id, e.text FROM unnest($1::text[]) AS k,
         LATERAL (SELECT id, text FROM events WHERE session_key = k AND status = 'pending'
                   ORDER BY seq DESC LIMIT 1) AS e`,
      [keys],
    );
    for (const row of rows) newest.set(row.session_key, { id: row.id, text: row.text });
    return newest;
  }

  /** Takes the idempotency key for this accept, or answers what its earlier use answered. */
  private async claimKey(tx: Tx, claim: IdempotencyClaim): Promise<AcceptResult | undefined> {
    const inserted = await tx.query(
      `WITH expired AS (
         DELETE FROM idempotency WHERE scope = $1 AND key = $2 AND created_at <= $5 RETURNING 1)
       INSERT INTO idempotency (scope, key, body_hash, status, body, created_at)
       VALUES ($1, $2, $3, 0, '', $4)
       ON CONFLICT (scope, key) DO UPDATE SET body_hash = excluded.body_hash, created_at = excluded.created_at
         WHERE idempotency.created_at <= $5
       RETURNING 1`,
      [claim.scope, claim.key, claim.bodyHash, claim.now, claim.now - claim.ttlMs],
    );
    if (inserted.rowCount === 1) return undefined;
    const { rows } = await tx.query<{ body_hash: string; status: number; body: string }>(
      'SELECT body_hash, status, body FROM idempotency WHERE scope = $1 AND key = $2',
      [claim.scope, claim.key],
    );
    const earlier = rows[0];
    if (!earlier) throw new Error('idempotency record vanished during its claim');
    return earlier.body_hash === claim.bodyHash
      ? { kind: 'replay', answer: { status: earlier.status, body: earlier.body } }
      : { kind: 'conflict' };
  }

  async getRun(runId: string): Promise<RunView | undefined> {
    await this.ready;
    const [row] = await read<RunRow>(
      this.pool,
      `SELECT id, status, agent_id, session_key, model, created_at, started_at, finished_at, reply, error,
              delivery_status, delivery_channel, delivery_to, delivery_reason, callback_status, callback_attempts
         FROM runs WHERE id = $1`,
      [runId],
    );
    if (!row) return undefined;
    return toRunView(row);
  }

  async listEvents(sessionKey: string, options: ListEventsOptions): Promise<EventView[] | undefined> {
    await this.ready;
    let afterSeq = 0;
    if (options.after !== undefined) {
      const [found] = await read<{ seq: number }>(
        this.pool,
        'SELECT seq FROM events WHERE id = $1 AND session_key = $2',
        [options.after, sessionKey],
      );
      if (!found) return undefined;
      afterSeq = found.seq;
    }
    const rows = await read<{
      id: string;
      ts: number;
      text: string;
      source: string;
      status: EventView['status'];
    }>(
      this.pool,
      'SELECT id, ts, text, source, status FROM events WHERE session_key = $1 AND seq > $2 ORDER BY seq LIMIT $3',
      [sessionKey, afterSeq, options.limit],
    );
    return rows.map((row) => ({
      id: row.id,
      ts: iso(row.ts) as string,
      text: row.text,
      source: row.source,
      status: row.status,
    }));
  }

  async consumeEvents(sessionKey: string, eventIds: readonly string[], now: number): Promise<number> {
    await this.ready;
    return inTransaction(this.pool, (tx) => consumeEventsInTx(tx, sessionKey, eventIds, now));
  }

  async counts(): Promise<StoreCounts> {
    await this.ready;
    // Each condition is its partial index's own (runs_active, deliveries_pending).
    const [row] = await read<{ queued: number; running: number; pending: number }>(
      this.pool,
      `SELECT
         (SELECT COUNT(*) FROM runs WHERE status IN ('queued', 'running') AND status = 'queued')::int AS queued,
         (SELECT COUNT(*) FROM runs WHERE status IN ('queued', 'running') AND status = 'running')::int AS running,
         (SELECT COUNT(*) FROM deliveries WHERE status = 'pending')::int AS pending`,
      [],
    );
    return {
      runsQueued: row?.queued ?? 0,
      runsRunning: row?.running ?? 0,
      deliveriesPending: row?.pending ?? 0,
    };
  }

  async pruneIdempotency(olderThan: number): Promise<number> {
    await this.ready;
    return inTransaction(this.pool, async (tx) => {
      const result = await tx.query('DELETE FROM idempotency WHERE created_at <= $1', [olderThan]);
      // Finished outbox rows are internal (the run or heartbeat keeps its delivery record):
      // kept a week for inspection, then dropped so the table does not only grow.
      await tx.query(`DELETE FROM deliveries WHERE status <> 'pending' AND updated_at <= $1`, [
        olderThan - FINISHED_DELIVERY_EXTRA_MS,
      ]);
      await pruneCallbacksInTx(tx, olderThan - FINISHED_DELIVERY_EXTRA_MS);
      return result.rowCount ?? 0;
    });
  }

  async pruneBatch(kind: PruneKind, olderThan: number, limit: number): Promise<PruneBatch> {
    await this.ready;
    return this.retention.pruneBatch(kind, olderThan, limit);
  }

  watchWork(listener: () => void): () => void {
    return this.listener.subscribe(WORK_CHANNEL, () => listener());
  }

  /** Settles once `watchWork`'s LISTEN is in place (tests wait for it). */
  listening(): Promise<void> {
    return this.listener.listening();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.listener.close();
    // Accepts and completions already taken are committed (or refused) before the pool goes.
    await this.accepts.drain();
    await this.runQueue.drain();
    await this.pool.end();
  }
}
