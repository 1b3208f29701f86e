/**
 * What retention may delete (docs/operating.md "Retention"), written once for
 * both drivers: the same tables and column names on SQLite and PostgreSQL, so
 * each rule is one SQL condition, and each driver only supplies its parameter
 * placeholder (`?` or `$1`) and runs the deletes in its own folder
 * (sqlite/retention.ts, postgres/retention.ts).
 *
 * Every rule is a conjunction that only ever excludes more: being old is never
 * enough. What is still to happen — a queued or running run, a pending event,
 * a reply in the outbox, a callback not yet sent — is kept however old, and so
 * is what does not belong to one run or event alone (a session's last route,
 * idempotency records with their own 24 h, the run queue's heads).
 *
 * Each rule selects the oldest first through an index on its age column
 * (runs_finished, events_consumed, heartbeats_by_age, transcripts_by_age), so a
 * batch reads about as many index entries as it deletes.
 */

/** A run whose status is one of these has finished; `queued` and `running` never are pruned. */
export const FINISHED_RUN_STATUSES = `'succeeded', 'failed', 'timed_out'`;

/**
 * Runs that may go (alias `r`), oldest finished first: finished before the
 * horizon, their delivery and callback settled — on the run's own record and in
 * the outbox rows behind it (a redelivery in progress, a callback still due) —
 * and not a run-queue head (heads are unfinished runs; checked anyway, so the
 * queue's bookkeeping can never point at a deleted run).
 */
export function prunableRunsSql(horizon: string, limit: string): string {
  return `SELECT r.seq, r.id FROM runs r
   WHERE r.finished_at < ${horizon}
     AND r.status IN (${FINISHED_RUN_STATUSES})
     AND r.delivery_status <> 'pending'
     AND r.callback_status <> 'pending'
     AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.ref_id = r.id AND d.kind = 'run' AND d.status = 'pending')
     AND NOT EXISTS (SELECT 1 FROM callbacks c WHERE c.run_id = r.id AND c.status IN ('waiting', 'pending'))
     AND NOT EXISTS (SELECT 1 FROM run_heads h WHERE h.session_key = r.session_key AND h.seq = r.seq)
   ORDER BY r.finished_at LIMIT ${limit}`;
}

/** The tables of what belongs to one run alone, keyed by `run_id`: deleted with the run. */
export const RUN_PART_TABLES = ['run_attachments', 'run_steps', 'run_approvals'] as const;

/** Outbox rows recorded only for a pruned run or heartbeat: never a pending one. */
export const SETTLED_DELIVERY = `status <> 'pending'`;

/** A pruned run's callback row: only once it was sent or gave up. */
export const SETTLED_CALLBACK = `status IN ('delivered', 'failed')`;

/**
 * Transcript entries written before the horizon (by the runs' and heartbeats'
 * turns): the same horizon as runs, oldest first. A session's newer entries stay.
 */
export function prunableTranscriptSql(horizon: string, limit: string): string {
  return `SELECT seq FROM transcripts WHERE ts < ${horizon} ORDER BY ts LIMIT ${limit}`;
}

/**
 * Events consumed (seen by a heartbeat that succeeded) before the horizon,
 * oldest consumption first. A pending event is never selected, however old.
 */
export function prunableEventsSql(horizon: string, limit: string): string {
  return `SELECT seq FROM events
   WHERE status = 'consumed' AND consumed_at < ${horizon}
   ORDER BY consumed_at LIMIT ${limit}`;
}

/**
 * Heartbeats (alias `h`; recorded once finished) that ended before the horizon
 * and whose reply is not waiting in the outbox, oldest first.
 */
export function prunableHeartbeatsSql(horizon: string, limit: string): string {
  return `SELECT h.seq, h.id FROM heartbeats h
   WHERE h.finished_at < ${horizon}
     AND h.delivery_status <> 'pending'
     AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.ref_id = h.id AND d.kind = 'heartbeat' AND d.status = 'pending')
   ORDER BY h.finished_at LIMIT ${limit}`;
}
