/** The store's run queue part (docs/architecture.md, "The store's parts"): claims, leases, completions. */
import type { AlertOutcome, NewAlert } from './alerts.js';
import type { SpendCounter } from './budgets.js';
import type { RunUsage } from './usage.js';
import type {
  Attachment,
  AttachmentInfo,
  DeliveryRecord,
  NewEvent,
  NewRun,
  TranscriptEntry,
} from './values.js';

/** A run the worker holds a lease on. */
export interface ClaimedRun extends NewRun {
  /** Claims of this run so far, this one included; a clean stop's release does not count. */
  attempts: number;
  startedAt: number;
  /** The run's files without their bytes (empty for none); `runs.loadAttachments` reads the bytes. */
  attachmentInfo: AttachmentInfo[];
  /** How long `deferRun` has held the run back in all, in ms (0 for none). */
  heldMs: number;
}

/**
 * Runs a claim leaves queued (docs/agent-runs.md, "Provider limits"): a run is held when any
 * list matches it. By model: `runs.model` starting with one of `modelPrefixes` (a provider's
 * `<provider>/`) or equal to one of `models` (aliases), or — a run with no model — its agent
 * among `agentIdsWithoutModel`. The caller, which knows the config, computes the lists; the
 * store filters in SQL. Absent or all empty: nothing is held.
 */
export interface ClaimHold {
  modelPrefixes?: readonly string[];
  models?: readonly string[];
  agentIdsWithoutModel?: readonly string[];
  sources?: readonly string[];
  tokenIds?: readonly string[];
  agentIds?: readonly string[];
}

/** How a run ended, written atomically with its transcript turn and its summary event. */
export interface RunCompletion {
  runId: string;
  owner: string;
  /** The run's own session, where its turn is appended. */
  sessionKey: string;
  status: 'succeeded' | 'failed' | 'timed_out';
  reply: string | null;
  error: string | null;
  finishedAt: number;
  /** The user/assistant turn to append to the run's session (succeeded runs only). */
  transcript: TranscriptEntry[];
  /** The summary system event for the agent's main session. */
  summary: NewEvent;
  /** Where the delivery stands now: `pending` (to be sent), `skipped` or `none`. */
  delivery: DeliveryRecord;
  /**
   * The `traceparent` of the run's span (docs/tracing.md): its reply's delivery and its
   * callback continue the trace from it. Absent or null with tracing off.
   */
  traceParent?: string | null;
  /** The alert a failed or timed-out run raises (docs/alerts.md), enqueued with the result. */
  alert?: NewAlert;
  /**
   * Every model call's usage, summed (docs/usage.md): this attempt's calls and the model steps
   * committed before it. Absent: no call was made (the run's view shows zeros).
   */
  usage?: RunUsage;
  /**
   * The budgets' counters its usage is added to (docs/budgets.md), in the completion's
   * transaction and only when it is recorded; absent or empty with no budget that counts it.
   */
  spend?: SpendCounter[];
}

/** The run queue: leases make sure a run is never executed twice at once. */
export interface RunQueueStore {
  /**
   * Leases up to `limit` runnable runs: queued (or running with an expired
   * lease), oldest first, at most the oldest unfinished run of each session
   * key, so runs sharing a key execute one at a time and in order. The slots
   * are shared fairly between run sources (store/fair-share.ts), each source
   * held to `caps(source)` running runs when that gives a number.
   */
  claimRuns(
    owner: string,
    now: number,
    leaseMs: number,
    limit: number,
    caps?: (source: string) => number | undefined,
    /** Runs to leave queued by this claim, whatever their turn. */
    hold?: ClaimHold,
  ): Promise<ClaimedRun[]>;
  renewLeases(owner: string, runIds: readonly string[], until: number): Promise<void>;
  /** Puts a leased run back in the queue (graceful stop); returns false when the lease was lost. */
  releaseRun(runId: string, owner: string): Promise<boolean>;
  /**
   * Puts a leased run back in the queue until `notBefore` (ms since the epoch): no claim takes it
   * before then. As a release, the claim is not counted as an attempt; the run's held time grows
   * by `notBefore - now` (store/rules/claim-hold.ts). False when the lease was lost.
   */
  deferRun(runId: string, owner: string, notBefore: number, now: number): Promise<boolean>;
  /** The earliest `notBefore` of a deferred run still ahead of `now`, or null for none. */
  nextNotBefore(now: number): Promise<number | null>;
  /** Re-queues runs whose lease owner is known to be gone; returns their ids. */
  requeueOrphans(isOwnerAlive: (owner: string) => boolean): Promise<string[]>;
  /** A run's files with their bytes, in the order given (docs/attachments.md); empty for none. */
  loadAttachments(runId: string): Promise<Attachment[]>;
  /** Records how a run ended; false when this owner no longer holds the lease (nothing written). */
  completeRun(completion: RunCompletion): Promise<boolean>;
  /**
   * Records how a run ended and, in the same transaction, claims runs for the
   * slot it frees, as `claimRuns` would for the completion's owner: a worker
   * going from one run to the next pays one commit instead of two.
   */
  completeAndClaim(completion: RunCompletion, claim: ClaimRequest): Promise<CompletionOutcome>;
}

/** The claim a completion asks for (`completeAndClaim`), as `claimRuns`'s arguments. */
export interface ClaimRequest {
  now: number;
  leaseMs: number;
  /** At most this many runs: the slots the completion frees. */
  limit: number;
  caps?: (source: string) => number | undefined;
  hold?: ClaimHold;
}

export interface CompletionOutcome {
  /** False when the owner no longer held the lease (nothing of the completion written). */
  recorded: boolean;
  /** Runs leased to the completion's owner in the same transaction. */
  next: ClaimedRun[];
  /** What became of the completion's alert, when it had one and was recorded. */
  alert?: AlertOutcome;
}
