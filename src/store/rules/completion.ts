/**
 * What a run's completion records besides its own row, the same on every
 * engine (docs/architecture.md, "The store's rules"): the engines record which
 * completions still held their lease (the fenced update), and write what this
 * plans for those, in the same transaction.
 *
 * - its session key's head moves on: the key's next unfinished run may start
 *   (keys run one at a time, in order);
 * - a succeeded run's user/assistant turn is appended to its session;
 * - the summary event goes to the agent's main session;
 * - a reply to deliver goes to the outbox; otherwise the run's result is final
 *   and its completion callback becomes due (a delivery settles it later).
 */
import type { NewOutboxItem } from '../rows.js';
import type { NewEvent, RunCompletion, TranscriptEntry } from '../types.js';

export interface TranscriptRow extends TranscriptEntry {
  sessionKey: string;
  runId: string | null;
  ts: number;
}

export interface CompletionWrites {
  /** Session keys whose head finished: each key's oldest unfinished run becomes its head. */
  headKeys: string[];
  transcript: TranscriptRow[];
  events: NewEvent[];
  deliveries: { item: NewOutboxItem; now: number }[];
  /** Runs whose result is final now: their callbacks (if any) become due at `now`. */
  callbacksDue: { runId: string; now: number }[];
}

/** The writes that follow from these completions, which held their leases. */
export function planCompletions(recorded: readonly RunCompletion[]): CompletionWrites {
  const writes: CompletionWrites = {
    headKeys: [...new Set(recorded.map((c) => c.sessionKey))],
    transcript: [],
    events: [],
    deliveries: [],
    callbacksDue: [],
  };
  for (const c of recorded) {
    for (const entry of c.transcript) {
      writes.transcript.push({ ...entry, sessionKey: c.sessionKey, runId: c.runId, ts: c.finishedAt });
    }
    writes.events.push(c.summary);
    if (c.delivery.status === 'pending' && c.reply !== null) {
      writes.deliveries.push({
        item: {
          kind: 'run',
          refId: c.runId,
          mainSessionKey: c.summary.sessionKey,
          channel: c.delivery.channel ?? 'last',
          to: c.delivery.to,
          text: c.reply,
        },
        now: c.finishedAt,
      });
    } else {
      writes.callbacksDue.push({ runId: c.runId, now: c.finishedAt });
    }
  }
  return writes;
}
