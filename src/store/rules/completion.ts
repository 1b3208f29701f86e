/**
 * What a run's completion records besides its own row, the same on every
 * driver (docs/architecture.md, "The store's rules, written once"): the
 * drivers record which completions still held their lease (the fenced update),
 * and write what this plans for those, in the same transaction.
 *
 * - its session key's head moves on: the key's next unfinished run may start
 *   (keys run one at a time, in order);
 * - a succeeded run's user/assistant turn is appended to its session;
 * - the summary event goes to the agent's main session;
 * - a reply to deliver goes to the outbox; otherwise the run's result is final
 *   and its completion callback becomes due (a delivery settles it later).
 */
import type { NewOutboxItem } from '../rows.js';
import type {
  AlertOutcome,
  ClaimedRun,
  ClaimRequest,
  CompletionOutcome,
  NewEvent,
  RunCompletion,
  TranscriptEntry,
} from '../types.js';

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
  /**
   * Runs whose result is final now: their callbacks (if any) become due at `now`,
   * continuing the run's trace from `traceParent` (docs/tracing.md).
   */
  callbacksDue: { runId: string; now: number; traceParent: string | null }[];
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
          traceParent: c.traceParent ?? null,
        },
        now: c.finishedAt,
      });
    } else {
      writes.callbacksDue.push({ runId: c.runId, now: c.finishedAt, traceParent: c.traceParent ?? null });
    }
  }
  return writes;
}

/** A completion as the drivers' group commit takes it, with the claim it asks for (if any). */
export interface CompletionItem {
  completion: RunCompletion;
  claim?: ClaimRequest;
}

/**
 * The claims a batch of completions asks for, one per owner (the slots its
 * completions free, together), claimed after the batch's writes in the same
 * transaction; `share` then hands the runs back to the completions that asked.
 */
export function claimsOf(batch: readonly CompletionItem[]): { owner: string; request: ClaimRequest }[] {
  const byOwner = new Map<string, ClaimRequest>();
  for (const { completion, claim } of batch) {
    if (!claim || claim.limit <= 0) continue;
    const mine = byOwner.get(completion.owner);
    byOwner.set(completion.owner, mine ? { ...mine, limit: mine.limit + claim.limit } : { ...claim });
  }
  return [...byOwner].map(([owner, request]) => ({ owner, request }));
}

/** Hands each owner's claimed runs to its completions, each at most its own limit, in batch order. */
export function share(
  batch: readonly CompletionItem[],
  claimed: ReadonlyMap<string, ClaimedRun[]>,
): ClaimedRun[][] {
  const left = new Map([...claimed].map(([owner, runs]) => [owner, [...runs]]));
  return batch.map(({ completion, claim }) => {
    const runs = left.get(completion.owner) ?? [];
    return runs.splice(0, Math.max(0, claim?.limit ?? 0));
  });
}

/**
 * What each completion of the batch answers: whether it held its lease (`recorded`), the runs
 * its claim got (`share`), and what became of its alert (docs/alerts.md).
 */
export function outcomesOf(
  batch: readonly CompletionItem[],
  recorded: readonly boolean[],
  alerts: readonly (AlertOutcome | undefined)[],
  claimed: ReadonlyMap<string, ClaimedRun[]>,
): CompletionOutcome[] {
  const next = share(batch, claimed);
  return batch.map((_, index) => {
    const alert = alerts[index];
    return { recorded: recorded[index] as boolean, next: next[index] ?? [], ...(alert ? { alert } : {}) };
  });
}
