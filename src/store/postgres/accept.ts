/**
 * The accept transaction of a group-committed batch on PostgreSQL, pipelined
 * (db.ts): its statements go out in at most two round trips, however many
 * accepts, keys and sessions the batch holds (docs/postgres.md, Group commit).
 *
 * 1. Only when the batch has idempotency keys or wakes: BEGIN, each key's claim,
 *    the wake sessions' advisory locks, and then — a statement of its own, so
 *    its snapshot sees every wake committed before the locks were granted — the
 *    newest pending event of each session. One round trip; the coalescing and
 *    the answers are decided from what it returns.
 * 2. The writes, then COMMIT: the keys' answers, the events, the run keys'
 *    advisory locks with the batch's one NOTIFY, the runs with their heads, the
 *    callbacks. One round trip. A batch of agent hooks without idempotency keys
 *    needs nothing back before its writes, so BEGIN goes with them: one round
 *    trip in all.
 *
 * Idempotency holds across replicas through the (scope, key) primary key: an
 * accept first inserts its key with ON CONFLICT DO NOTHING; a second replica
 * sending the same key at the same moment blocks on that row until the first
 * commits, then reads and replays its answer (the same runId).
 */

import {
  type EarlierAnswer,
  type NewestPending,
  type PendingAccept,
  planAccept,
  RUN_COLUMNS,
  repeatOf,
  replayOrConflict,
  runValues,
} from '../rules/accept.js';
import type { AcceptResult, IdempotencyClaim, NewEvent, NewRun, StoredAnswer } from '../types.js';
import { insertCallbacksInTx } from './callbacks.js';
import type { Pipeline } from './db.js';
import { columnsOf, eventColumns, INSERT_EVENTS } from './tx-writer.js';
import { WORK_CHANNEL } from './work-listener.js';

export type { PendingAccept };

const RUN_WIDTH = RUN_COLUMNS.split(',').length;

/** Takes a key, or renews one whose record expired; returns a row only when it took it. */
const CLAIM_KEY = `
  WITH expired AS (
    DELETE FROM idempotency WHERE scope = $1 AND key = $2 AND created_at <= $5 RETURNING 1)
  INSERT INTO idempotency (scope, key, body_hash, status, body, created_at)
  VALUES ($1, $2, $3, 0, '', $4)
  ON CONFLICT (scope, key) DO UPDATE SET body_hash = excluded.body_hash, created_at = excluded.created_at
    WHERE idempotency.created_at <= $5
  RETURNING 1`;

/** The records of keys used before (read after their claims found them taken). */
const EARLIER_ANSWERS = `
  SELECT i.scope, i.key, i.body_hash, i.status, i.body
    FROM unnest($1::text[], $2::text[]) AS u(scope, key)
    JOIN idempotency i ON i.scope = u.scope AND i.key = u.key`;

/** Session keys' advisory locks, in sorted order (no deadlock between replicas). */
const LOCK_KEYS = 'SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) FROM unnest($1::text[]) AS k';

/** The same, and the batch's one NOTIFY, sent to every replica's listener at commit. */
const LOCK_KEYS_AND_NOTIFY = `
  SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))), pg_notify('${WORK_CHANNEL}', '')
    FROM unnest($1::text[]) AS k`;

/**
 * LATERAL … LIMIT 1 reads one index entry per session; DISTINCT ON would read
 * every pending event of the session (no skip scan), which grows with the backlog.
 */
const NEWEST_PENDING = `
  SELECT k AS session_key, e.id, e.text FROM unnest($1::text[]) AS k,
    LATERAL (SELECT id, text FROM events WHERE session_key = k AND status = 'pending'
              ORDER BY seq DESC LIMIT 1) AS e`;

const SET_ANSWERS = `
  UPDATE idempotency i SET status = u.status, body = u.body
    FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) AS u(scope, key, status, body)
   WHERE i.scope = u.scope AND i.key = u.key`;

const INSERT_RUNS = `
  INSERT INTO runs (${RUN_COLUMNS})
  SELECT ${RUN_COLUMNS}
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                       $8::text[], $9::float8[], $10::text[], $11::bool[], $12::text[], $13::text[], $14::bool[],
                       $15::text[], $16::int8[], $17::text[], $18::text[], $19::text[], $20::text[], $21::text[],
                       $22::text[], $23::text[], $24::bool[], $25::text[])
         WITH ORDINALITY AS t(${RUN_COLUMNS}, n)
   ORDER BY n
  RETURNING session_key, seq, source`;

/** Inserts the runs, and makes each its key's head when the key has none (heads only move on completion). */
const INSERT_RUNS_AND_HEADS = `
  WITH inserted AS (${INSERT_RUNS})
  INSERT INTO run_heads (session_key, seq, source)
  SELECT DISTINCT ON (session_key) session_key, seq, source FROM inserted ORDER BY session_key, seq
  ON CONFLICT (session_key) DO NOTHING`;

/** The runs' values as the unnest arrays of INSERT_RUNS, one array per column (`RUN_COLUMNS`). */
function runColumns(runs: readonly NewRun[]): unknown[][] {
  return columnsOf(
    runs.map((run) => runValues(run, (value) => value)),
    RUN_WIDTH,
  );
}

/**
 * One file's bytes: a statement per file, so its Buffer goes out as a binary parameter as it
 * is (an array parameter would be sent as hex text, twice the size, built in memory).
 */
const INSERT_ATTACHMENT = `
  INSERT INTO run_attachments (run_id, idx, name, media_type, bytes, data) VALUES ($1, $2, $3, $4, $5, $6)`;

/** A retry's files, copied inside the database: the bytes never come to the process. */
const COPY_ATTACHMENTS = `
  INSERT INTO run_attachments (run_id, idx, name, media_type, bytes, data)
  SELECT $1, idx, name, media_type, bytes, data FROM run_attachments WHERE run_id = $2`;

/** The runs' files, sent in the same pipeline after the runs (no round trip of their own). */
function sendAttachments(tx: Pipeline, runs: readonly NewRun[]): void {
  for (const run of runs) {
    for (const [idx, file] of (run.attachments ?? []).entries()) {
      tx.send(INSERT_ATTACHMENT, [run.id, idx, file.name, file.mediaType, file.bytes, file.data]);
    }
    if (run.attachmentsFrom) tx.send(COPY_ATTACHMENTS, [run.id, run.attachmentsFrom.runId]);
  }
}

const sortedUnique = (keys: Iterable<string>) => [...new Set(keys)].sort();

export async function acceptBatch(tx: Pipeline, batch: readonly PendingAccept[]): Promise<AcceptResult[]> {
  // 1. Idempotency keys, in order; a key used twice in one batch replays its first use.
  const firstUse = new Map<string, number>();
  const repeats = new Map<number, number>();
  const claims: { index: number; claim: IdempotencyClaim; taken: Promise<{ rowCount: number | null }> }[] =
    [];
  for (const [index, { idempotency: claim }] of batch.entries()) {
    if (!claim) continue;
    const id = `${claim.scope}\u0000${claim.key}`;
    const of = firstUse.get(id);
    if (of !== undefined) {
      repeats.set(index, of);
      continue;
    }
    firstUse.set(id, index);
    const values = [claim.scope, claim.key, claim.bodyHash, claim.now, claim.now - claim.ttlMs];
    claims.push({ index, claim, taken: tx.send(CLAIM_KEY, values) });
  }
  // 2. Wakes: one lock and one read per session for the whole batch. The sessions of
  // accepts that turn out to be replays are read too: harmless, and it saves a round trip.
  const wakeKeys = sortedUnique(
    batch.flatMap((item, i) =>
      repeats.has(i) ? [] : item.actions.flatMap((a) => (a.kind === 'wake' ? [a.event.sessionKey] : [])),
    ),
  );
  let newestRead: Promise<{ rows: { session_key: string; id: string; text: string }[] }> | undefined;
  if (wakeKeys.length > 0) {
    tx.send(LOCK_KEYS, [wakeKeys]);
    newestRead = tx.send(NEWEST_PENDING, [wakeKeys]);
  }
  const results: (AcceptResult | undefined)[] = batch.map(() => undefined);
  const newest = new Map<string, NewestPending>();
  if (claims.length > 0 || newestRead) {
    await tx.flush();
    for (const row of (await newestRead)?.rows ?? []) newest.set(row.session_key, row);
    await replayEarlierUses(tx, claims, repeats, batch, results);
  }

  // 3. Coalescing and the answers.
  const events: NewEvent[] = [];
  const runs: NewRun[] = [];
  const answered: { claim: IdempotencyClaim; answer: StoredAnswer }[] = [];
  for (const [i, item] of batch.entries()) {
    if (results[i] !== undefined || repeats.has(i)) continue;
    const plan = planAccept(item, newest);
    events.push(...plan.events);
    runs.push(...plan.runs);
    results[i] = plan.result;
    if (item.idempotency) answered.push({ claim: item.idempotency, answer: plan.result.answer });
  }
  for (const [index, of] of repeats) {
    if (results[index] !== undefined) continue; // its key was used before this batch
    const same = batch[index]?.idempotency?.bodyHash === batch[of]?.idempotency?.bodyHash;
    results[index] = repeatOf(results[of] as AcceptResult, same);
  }

  // 4. The writes: a statement each, whatever the batch size, sent with the COMMIT.
  if (answered.length > 0) {
    tx.send(SET_ANSWERS, [
      answered.map((a) => a.claim.scope),
      answered.map((a) => a.claim.key),
      answered.map((a) => a.answer.status),
      answered.map((a) => a.answer.body),
    ]);
  }
  if (events.length > 0) {
    tx.send(INSERT_EVENTS, eventColumns(events));
  }
  if (runs.length > 0) {
    // The keys' locks order this insert against completions (which move the heads), and
    // the one NOTIFY of the batch reaches every replica's listener at commit.
    tx.send(LOCK_KEYS_AND_NOTIFY, [sortedUnique(runs.map((r) => r.sessionKey))]);
    tx.send(INSERT_RUNS_AND_HEADS, runColumns(runs));
    sendAttachments(tx, runs);
    insertCallbacksInTx(tx, runs);
  }
  return results as AcceptResult[];
}

/**
 * The accepts whose key was taken before this batch, and their repeats within
 * it: each answers what the key's first use answered, or a conflict.
 */
async function replayEarlierUses(
  tx: Pipeline,
  claims: readonly { index: number; claim: IdempotencyClaim; taken: Promise<{ rowCount: number | null }> }[],
  repeats: ReadonlyMap<number, number>,
  batch: readonly PendingAccept[],
  results: (AcceptResult | undefined)[],
): Promise<void> {
  const refused: { index: number; claim: IdempotencyClaim }[] = [];
  for (const one of claims) if ((await one.taken).rowCount !== 1) refused.push(one);
  if (refused.length === 0) return;
  const read = tx.send<EarlierAnswer & { scope: string; key: string }>(EARLIER_ANSWERS, [
    refused.map((r) => r.claim.scope),
    refused.map((r) => r.claim.key),
  ]);
  await tx.flush();
  const earlier = new Map((await read).rows.map((row) => [`${row.scope}\u0000${row.key}`, row]));
  const answer = (index: number, row: EarlierAnswer) => {
    results[index] = replayOrConflict(row, batch[index]?.idempotency?.bodyHash ?? '');
  };
  const rowOf = new Map<number, EarlierAnswer>();
  for (const { index, claim } of refused) {
    const row = earlier.get(`${claim.scope}\u0000${claim.key}`);
    if (!row) throw new Error('idempotency record vanished during its claim');
    rowOf.set(index, row);
    answer(index, row);
  }
  for (const [index, of] of repeats) {
    const row = rowOf.get(of);
    if (row) answer(index, row);
  }
}
