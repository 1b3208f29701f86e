/**
 * A batch of completions' writes on PostgreSQL in one statement: the fenced
 * update of the runs, and for those whose lease still held — only those — the
 * writes store/rules/completion.ts plans (turns, summaries, replies to deliver,
 * callbacks made due). Each write is a data-modifying CTE that keeps the rows of
 * the runs the fence let through, so a lost lease writes nothing, without a
 * round trip between the fence and the writes (docs/architecture.md, "What a
 * run costs the store"). The statement answers the ids of the runs recorded.
 */
import { uuidv7 } from '../../util/ids.js';
import { SPEND_ADD, SPEND_COLUMNS, SPEND_ORDER, spendEntries } from '../rules/budgets.js';
import type { CompletionWrites } from '../rules/completion.js';
import type { RunCompletion } from '../types.js';

/** The statement and its values; its text varies only with which kinds of writes the batch has. */
export interface RecordStatement {
  text: string;
  values: unknown[];
}

/** Builds the statement's values as it is written: `unnest` over one array per column. */
class Columns {
  readonly values: unknown[] = [];

  unnest(...columns: [unknown[], 'text' | 'int8' | 'float8'][]): string {
    const params = columns.map(([column, type]) => {
      this.values.push(column);
      return `$${this.values.length}::${type}[]`;
    });
    return `unnest(${params.join(', ')})`;
  }
}

export function recordCompletions(
  batch: readonly RunCompletion[],
  writes: CompletionWrites,
): RecordStatement {
  const v = new Columns();
  const of = <T>(rows: readonly T[], pick: (row: T) => unknown) => rows.map(pick);
  const ctes = [
    `done AS (
      UPDATE runs r SET status = c.status, reply = c.reply, error = c.error, finished_at = c.finished_at,
                        lease_owner = NULL, lease_until = NULL, delivery_status = c.delivery_status,
                        delivery_channel = c.delivery_channel, delivery_to = c.delivery_to,
                        delivery_reason = c.delivery_reason, usage_model = c.usage_model,
                        input_tokens = c.input_tokens, output_tokens = c.output_tokens,
                        cache_read_tokens = c.cache_read_tokens, cache_write_tokens = c.cache_write_tokens,
                        cost_usd = c.cost_usd
        FROM ${v.unnest(
          [of(batch, (c) => c.runId), 'text'],
          [of(batch, (c) => c.owner), 'text'],
          [of(batch, (c) => c.status), 'text'],
          [of(batch, (c) => c.reply), 'text'],
          [of(batch, (c) => c.error), 'text'],
          [of(batch, (c) => c.finishedAt), 'int8'],
          [of(batch, (c) => c.delivery.status), 'text'],
          [of(batch, (c) => c.delivery.channel), 'text'],
          [of(batch, (c) => c.delivery.to), 'text'],
          [of(batch, (c) => c.delivery.reason), 'text'],
          [of(batch, (c) => c.usage?.model ?? null), 'text'],
          [of(batch, (c) => c.usage?.inputTokens ?? 0), 'int8'],
          [of(batch, (c) => c.usage?.outputTokens ?? 0), 'int8'],
          [of(batch, (c) => c.usage?.cacheReadTokens ?? 0), 'int8'],
          [of(batch, (c) => c.usage?.cacheWriteTokens ?? 0), 'int8'],
          [of(batch, (c) => c.usage?.costUsd ?? null), 'float8'],
        )}
             AS c(id, owner, status, reply, error, finished_at, delivery_status, delivery_channel,
                  delivery_to, delivery_reason, usage_model, input_tokens, output_tokens,
                  cache_read_tokens, cache_write_tokens, cost_usd)
       WHERE r.id = c.id AND r.lease_owner = c.owner AND r.status = 'running'
      RETURNING r.id)`,
  ];
  const { transcript, events, deliveries, callbacksDue } = writes;
  if (transcript.length > 0) {
    ctes.push(`turns AS (
      INSERT INTO transcripts (session_key, role, content, run_id, ts)
      SELECT session_key, role, content, run_id, ts
        FROM ${v.unnest(
          [of(transcript, (r) => r.sessionKey), 'text'],
          [of(transcript, (r) => r.role), 'text'],
          [of(transcript, (r) => r.content), 'text'],
          [of(transcript, (r) => r.runId), 'text'],
          [of(transcript, (r) => r.ts), 'int8'],
        )} WITH ORDINALITY AS t(session_key, role, content, run_id, ts, n)
       WHERE run_id IN (SELECT id FROM done)
       ORDER BY n)`);
  }
  if (events.length > 0) {
    // One summary per completion, in the batch's order (planCompletions): its run is the completion's.
    ctes.push(`summaries AS (
      INSERT INTO events (id, session_key, ts, text, source, wake_mode, trace_parent)
      SELECT id, session_key, ts, text, source, wake_mode, trace_parent
        FROM ${v.unnest(
          [of(events, (e) => e.id), 'text'],
          [of(events, (e) => e.sessionKey), 'text'],
          [of(events, (e) => e.ts), 'int8'],
          [of(events, (e) => e.text), 'text'],
          [of(events, (e) => e.source), 'text'],
          [of(events, (e) => e.wakeMode), 'text'],
          [of(events, (e) => e.traceParent ?? null), 'text'],
          [of(batch, (c) => c.runId), 'text'],
        )} WITH ORDINALITY AS t(id, session_key, ts, text, source, wake_mode, trace_parent, run_id, n)
       WHERE run_id IN (SELECT id FROM done)
       ORDER BY n)`);
  }
  if (deliveries.length > 0) {
    ctes.push(`replies AS (
      INSERT INTO deliveries (id, kind, ref_id, main_session_key, channel, recipient, text, next_attempt_at,
                              created_at, updated_at, trace_parent)
      SELECT id, kind, ref_id, main_session_key, channel, recipient, text, now, now, now, trace_parent
        FROM ${v.unnest(
          [of(deliveries, ({ now }) => `dlv_${uuidv7(now)}`), 'text'],
          [of(deliveries, ({ item }) => item.kind), 'text'],
          [of(deliveries, ({ item }) => item.refId), 'text'],
          [of(deliveries, ({ item }) => item.mainSessionKey), 'text'],
          [of(deliveries, ({ item }) => item.channel), 'text'],
          [of(deliveries, ({ item }) => item.to), 'text'],
          [of(deliveries, ({ item }) => item.text), 'text'],
          [of(deliveries, ({ now }) => now), 'int8'],
          [of(deliveries, ({ item }) => item.traceParent ?? null), 'text'],
        )} WITH ORDINALITY AS t(id, kind, ref_id, main_session_key, channel, recipient, text, now,
                                 trace_parent, n)
       WHERE ref_id IN (SELECT id FROM done)
       ORDER BY n)`);
  }
  if (callbacksDue.length > 0) {
    ctes.push(`due AS (
      UPDATE callbacks c SET status = 'pending', armed_at = u.now, next_attempt_at = u.now, updated_at = u.now,
                             trace_parent = u.trace_parent
        FROM ${v.unnest(
          [of(callbacksDue, (r) => r.runId), 'text'],
          [of(callbacksDue, (r) => r.now), 'int8'],
          [of(callbacksDue, (r) => r.traceParent), 'text'],
        )}
             AS u(run_id, now, trace_parent)
       WHERE c.run_id = u.run_id AND c.status = 'waiting' AND u.run_id IN (SELECT id FROM done))`);
  }
  const spent = spendEntries(batch);
  if (spent.length > 0) {
    // Summed per counter over the completions recorded, in SPEND_ORDER (docs/budgets.md).
    ctes.push(`spent AS (
      INSERT INTO budget_spend (${SPEND_COLUMNS})
      SELECT scope, win, start, max(ends_at), sum(usd), sum(tokens)
        FROM ${v.unnest(
          [of(spent, (s) => s.runId), 'text'],
          [of(spent, (s) => s.row.scope), 'text'],
          [of(spent, (s) => s.row.window), 'text'],
          [of(spent, (s) => s.row.start), 'int8'],
          [of(spent, (s) => s.row.endsAt), 'int8'],
          [of(spent, (s) => s.row.usd), 'float8'],
          [of(spent, (s) => s.row.tokens), 'int8'],
        )} AS s(run_id, scope, win, start, ends_at, usd, tokens)
       WHERE run_id IN (SELECT id FROM done)
       GROUP BY scope, win, start
       ORDER BY ${SPEND_ORDER}
      ${SPEND_ADD})`);
  }
  return { text: `WITH ${ctes.join(',\n')}\nSELECT id FROM done`, values: v.values };
}
