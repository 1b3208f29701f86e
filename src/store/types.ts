/**
 * The durable store behind the gateway. The ingress only ever calls `accept`,
 * which commits actions (and the idempotency record) atomically before any
 * answer is sent. Methods are async so that a networked engine can implement
 * the same interface.
 */

export type WakeMode = 'now' | 'next-heartbeat';
export type RunStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'timed_out';
export type DeliveryStatus = 'pending' | 'delivered' | 'skipped' | 'failed' | 'none';
export type EventStatus = 'pending' | 'consumed';
/** A run's completion callback (docs/callers.md, "`callback` in the RunView"): `none` for no callbackUrl. */
export type CallbackStatus = 'none' | 'pending' | 'delivered' | 'failed';

/** A system event for a main session (docs/endpoints.md, "`POST /hooks/wake` — queue a system event"). */
export interface NewEvent {
  id: string;
  sessionKey: string;
  text: string;
  /** Where it came from, e.g. "hook:wake" or "hook:github". */
  source: string;
  wakeMode: WakeMode;
  ts: number;
  /** The id of the hook token that accepted it (docs/senders.md); absent or null when no hook token did. */
  tokenId?: string | null;
  /**
   * The W3C `traceparent` of the hook request that queued it, for the heartbeat to link its trace to
   * (docs/tracing.md); absent or null when tracing was off.
   */
  traceParent?: string | null;
}

/** A file given with a run, as the RunView shows it (docs/attachments.md). */
export interface AttachmentInfo {
  name: string;
  /** One of the accepted types (docs/attachments.md), lower case. */
  mediaType: string;
  /** Its size, decoded. */
  bytes: number;
}

/** A file given with a run, with its bytes. */
export interface Attachment extends AttachmentInfo {
  data: Buffer;
}

/** Everything the worker needs to execute an agent run later. */
export interface NewRun {
  id: string;
  agentId: string;
  sessionKey: string;
  mainSessionKey: string;
  name: string | null;
  message: string;
  /** Resolved `<provider>/<model>`, or null for the agent's default at run time. */
  model: string | null;
  thinking: string | null;
  timeoutSeconds: number;
  wakeMode: WakeMode;
  deliver: boolean;
  channel: string;
  to: string | null;
  allowUnsafeExternalContent: boolean;
  source: string;
  createdAt: number;
  /** Where the run's completion callback goes (docs/callers.md); absent or null for none. */
  callbackUrl?: string | null;
  /** The run this one retries (`POST /api/runs/{id}/retry`); absent or null for a first run. */
  retryOf?: string | null;
  /**
   * The id of the hook token that accepted it (docs/senders.md); absent or null when no hook
   * token did (a retry is the operator's, not the sender's).
   */
  tokenId?: string | null;
  /**
   * The W3C `traceparent` of the hook request's span, for the worker to continue its trace
   * (docs/tracing.md); absent or null when tracing was off (and for a retry).
   */
  traceParent?: string | null;
  /** Files given with the run, committed with it (docs/attachments.md); absent, null or empty for none. */
  attachments?: Attachment[] | null;
  /**
   * A retry's files: the accept copies that run's attachments (the bytes stay in the store) and
   * shows `list` on the new run; absent or null for none.
   */
  attachmentsFrom?: { runId: string; list: AttachmentInfo[] } | null;
  /**
   * Accepted with `Accept: text/event-stream` (docs/callers.md, "Streamed answers"): the
   * worker asks the model for a streamed answer and publishes its pieces. Absent or false
   * for every other run (a retry included).
   */
  stream?: boolean;
}

export type Action =
  | { kind: 'wake'; event: NewEvent }
  | {
      kind: 'agent';
      run: NewRun;
      /** Ingress only, never stored: the HTTP answer waits for this run (`waitForCompletion`). */
      waitForCompletion?: boolean;
    };

export type Committed =
  | { kind: 'wake'; eventId: string; outcome: 'queued' | 'coalesced' }
  | { kind: 'agent'; runId: string };

/** The HTTP answer recorded with an idempotency key, replayed verbatim on a repeat. */
export interface StoredAnswer {
  status: number;
  body: string;
}

export interface IdempotencyClaim {
  /** The hook path the key is scoped to. */
  scope: string;
  key: string;
  /** Hash of the raw request body, to tell a repeat from a conflicting reuse. */
  bodyHash: string;
  now: number;
  /** Records older than this are ignored (and pruned). */
  ttlMs: number;
}

export type AcceptResult =
  | { kind: 'committed'; committed: Committed[]; answer: StoredAnswer }
  | { kind: 'replay'; answer: StoredAnswer }
  | { kind: 'conflict' };

export interface RunView {
  runId: string;
  status: RunStatus;
  agentId: string;
  sessionKey: string;
  model: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  reply: string | null;
  error: string | null;
  delivery: { status: DeliveryStatus; channel: string | null; to: string | null; reason: string | null };
  /** `attempts` counts HTTP attempts, the successful one included. */
  callback: { status: CallbackStatus; attempts: number };
  /** The hook token that accepted the run (`default` for hooks.token); null when none did. */
  tokenId: string | null;
  /** The files given with the run (docs/attachments.md); empty when none. */
  attachments: AttachmentInfo[];
}

export interface EventView {
  id: string;
  ts: string;
  text: string;
  source: string;
  status: EventStatus;
  /** The hook token that accepted the event (docs/senders.md); null when none did (a run's summary). */
  tokenId: string | null;
}

export interface ListEventsOptions {
  /** Only events after this event id. */
  after?: string;
  limit: number;
}

/** A run the worker holds a lease on. */
export interface ClaimedRun extends NewRun {
  /** Claims of this run so far, this one included; a clean stop's release does not count. */
  attempts: number;
  startedAt: number;
  /** The run's files without their bytes (empty for none); `runs.loadAttachments` reads the bytes. */
  attachmentInfo: AttachmentInfo[];
}

export interface TranscriptEntry {
  role: 'user' | 'assistant';
  content: string;
}

export interface DeliveryRecord {
  status: DeliveryStatus;
  channel: string | null;
  to: string | null;
  reason: string | null;
}

export interface DeliveryRoute {
  channel: string;
  to: string;
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
}

/** The failures an alert is raised for (docs/alerts.md). */
export const ALERT_EVENTS = ['run.failed', 'delivery.failed', 'callback.failed'] as const;
export type AlertEvent = (typeof ALERT_EVENTS)[number];

/**
 * One failure's alert message (docs/alerts.md), put in the delivery outbox (kind `alert`) in the
 * transaction that records the failure, so it exists once, however many replicas there are.
 */
export interface NewAlert {
  event: AlertEvent;
  /** The run (or heartbeat, for a reply's delivery) that failed. */
  refId: string;
  /** The alert route: a configured channel and a recipient on it. */
  channel: string;
  to: string;
  text: string;
  /**
   * Alert messages enqueued in the rolling hour before this one (summaries aside) at which it is
   * kept as `suppressed` instead, to be counted in the hour's summary.
   */
  maxPerHour: number;
}

/** What became of an alert: `queued` in the outbox, or `suppressed` (over the hour's cap). */
export type AlertOutcome = 'queued' | 'suppressed';

/** How many suppressed failures of each kind a summary sums up. */
export type AlertCounts = Record<AlertEvent, number>;

/** The summary message of an hour's suppressed alerts, made from their counts. */
export type AlertSummaryText = (
  counts: AlertCounts,
  total: number,
) => { channel: string; to: string; text: string };

export interface PendingEvent {
  id: string;
  ts: number;
  text: string;
  source: string;
  wakeMode: WakeMode;
  /** The `traceparent` it was accepted with (NewEvent.traceParent); null for none. */
  traceParent?: string | null;
}

export interface HeartbeatRecord {
  id: string;
  sessionKey: string;
  startedAt: number;
  finishedAt: number;
  status: 'succeeded' | 'failed';
  eventIds: string[];
  reply: string | null;
  error: string | null;
  /** The turn appended to the main session's transcript (succeeded only). */
  transcript: TranscriptEntry[];
  delivery: DeliveryRecord;
  /** The `traceparent` of the heartbeat's span, which its reply's delivery continues (docs/tracing.md). */
  traceParent?: string | null;
}

export interface HeartbeatView {
  id: string;
  startedAt: string;
  finishedAt: string;
  status: 'succeeded' | 'failed';
  eventCount: number;
  reply: string | null;
  error: string | null;
  delivery: DeliveryRecord;
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
  ): Promise<ClaimedRun[]>;
  renewLeases(owner: string, runIds: readonly string[], until: number): Promise<void>;
  /** Puts a leased run back in the queue (graceful stop); returns false when the lease was lost. */
  releaseRun(runId: string, owner: string): Promise<boolean>;
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
}

export interface CompletionOutcome {
  /** False when the owner no longer held the lease (nothing of the completion written). */
  recorded: boolean;
  /** Runs leased to the completion's owner in the same transaction. */
  next: ClaimedRun[];
  /** What became of the completion's alert, when it had one and was recorded. */
  alert?: AlertOutcome;
}

export interface SessionStore {
  /** The newest `limit` turns of a session, oldest first. */
  loadTranscript(sessionKey: string, limit: number): Promise<TranscriptEntry[]>;
  pendingEvents(sessionKey: string, limit: number): Promise<PendingEvent[]>;
  /** Main sessions that have pending events asking for an immediate heartbeat. */
  sessionsAwaitingHeartbeat(): Promise<string[]>;
  /** Records a heartbeat; when it succeeded, also consumes its events and appends its turn. */
  recordHeartbeat(record: HeartbeatRecord): Promise<void>;
  listHeartbeats(sessionKey: string, limit: number): Promise<HeartbeatView[]>;
  /**
   * Takes the lease on a main session's heartbeat for `owner` until `until`, so
   * one heartbeat runs at a time per session across replicas; false when another
   * owner holds an unexpired lease. (One process per SQLite file: always true.)
   */
  acquireHeartbeatLease(sessionKey: string, owner: string, now: number, until: number): Promise<boolean>;
  releaseHeartbeatLease(sessionKey: string, owner: string): Promise<void>;
  getRoute(mainSessionKey: string): Promise<DeliveryRoute | undefined>;
  setRoute(mainSessionKey: string, route: DeliveryRoute, now: number): Promise<void>;
}

/** A reply waiting in the outbox to be delivered (or being delivered, part by part). */
export interface OutboxItem {
  id: string;
  /** A run's or a heartbeat's reply, or an alert message (docs/alerts.md), which updates no record. */
  kind: 'run' | 'heartbeat' | 'alert';
  /** The run or heartbeat whose delivery record this item updates (an alert's: the one that failed). */
  refId: string;
  mainSessionKey: string;
  /** As requested: a channel id or `last`. */
  channel: string;
  to: string | null;
  text: string;
  /** Where it goes, fixed at the first attempt so retries and resumes go to the same place. */
  resolved: DeliveryRoute | null;
  partsSent: number;
  attempts: number;
  /** When the next attempt may start (ms since the epoch): enqueue time, or the retry time. */
  nextAttemptAt: number;
  /** The span of the run or heartbeat that made the reply, to continue (docs/tracing.md); null for none. */
  traceParent: string | null;
}

export interface DeliveryOutboxStore {
  /**
   * What the delivery engine may work on, oldest first (in enqueue order), up to
   * `limit`: for each fixed route (channel and recipient) its oldest pending item,
   * due or not — later items to the same recipient wait behind it, so replies
   * keep their order — and every pending item whose route is not fixed yet.
   */
  deliveryHeads(limit: number): Promise<OutboxItem[]>;
  resolveDelivery(id: string, route: DeliveryRoute, now: number): Promise<void>;
  /** Records that parts 1..partsSent have been sent. */
  markPartsSent(id: string, partsSent: number, now: number): Promise<void>;
  /** A failed attempt that will be retried at `nextAttemptAt`; the run/heartbeat shows why. */
  retryDelivery(
    item: OutboxItem,
    attempts: number,
    nextAttemptAt: number,
    error: string,
    now: number,
  ): Promise<void>;
  /**
   * Ends a delivery: the outbox item and the run or heartbeat record, and on success the session's
   * last route; with `alert` (a reply that failed: docs/alerts.md), enqueues it in the same
   * transaction and answers what became of it. An alert item ends alone: no record, no route.
   */
  finishDelivery(
    item: OutboxItem,
    record: DeliveryRecord,
    now: number,
    alert?: NewAlert,
  ): Promise<AlertOutcome | undefined>;
  /**
   * Once the oldest `suppressed` alert is an hour old (docs/alerts.md, "The cap"), marks every
   * suppressed alert `summarized` and enqueues one summary message made by `summary` from their
   * counts, in one transaction, so one replica does it once; undefined when none is due.
   */
  summarizeAlerts(now: number, summary: AlertSummaryText): Promise<AlertCounts | undefined>;
}

/** When an address is locked out (docs/authentication.md): `maxFailures` within `windowMs` lock it for `lockoutMs`. */
export interface LockoutPolicy {
  maxFailures: number;
  windowMs: number;
  lockoutMs: number;
}

/** A lockout in force: the address key (IPv6 by /64) and when it ends (ms since the epoch). */
export interface AddressLock {
  key: string;
  until: number;
}

/**
 * What the ledger made of one failure: 'counted' (within the limit), 'locked'
 * (the failure that reached the limit: still answered 401, and the lock begins)
 * or 'refused' (the address was already locked: answered 429); `until` is the
 * lock's end.
 */
export type LedgerVerdict = { outcome: 'counted' } | { outcome: 'locked' | 'refused'; until: number };

/**
 * Auth failures counted across replicas (docs/postgres.md). Only engines shared by
 * several processes have one (PostgreSQL); a SQLite file has one process, whose
 * in-memory count is the whole count.
 */
export interface LockoutLedger {
  /**
   * Counts these failures and returns a verdict for each, in order, once they
   * are committed; a lock that begins is announced to every replica (`watchLocks`).
   */
  recordFailures(
    failures: readonly { key: string; at: number }[],
    policy: LockoutPolicy,
  ): Promise<LedgerVerdict[]>;
  /** Forgets these addresses' failures unless they are locked (a success outside a lockout). */
  reset(keys: readonly string[], now: number): Promise<void>;
  /** The locks in force at `now`, for a replica that starts or missed announcements. */
  activeLocks(now: number): Promise<AddressLock[]>;
  /** Calls `listener` with each lock any replica starts; with undefined when some may have been missed. */
  watchLocks(listener: (lock: AddressLock | undefined) => void): () => void;
  /** Drops rows with nothing left to remember; returns how many. */
  prune(now: number, windowMs: number): Promise<number>;
}

/**
 * A completion callback in its outbox (docs/callers.md, "What is sent"). The row is written with
 * the run at its acceptance and becomes due once the run's result is final:
 * at completion when nothing is to be delivered, else when the delivery
 * settles (delivered, failed or skipped), so the body's `delivery` is final.
 */
export interface CallbackItem {
  /** The `webhook-id`: the same on every attempt. */
  id: string;
  runId: string;
  url: string;
  /** HTTP attempts made so far. */
  attempts: number;
  /** When the callback became due (ms since the epoch); retries are counted from here. */
  armedAt: number;
  nextAttemptAt: number;
  /** The body, fixed at the first attempt so every retry sends the same bytes; null before it. */
  body: string | null;
  /** The span of the run it reports on, to continue (docs/tracing.md); null for none. */
  traceParent: string | null;
}

/** The outcome of one attempt, recorded on the callback and on its run's RunView. */
export interface CallbackAttempt {
  /** HTTP attempts so far, this one included. */
  attempts: number;
  body: string;
  /** Why the attempt failed (null when delivered). */
  error: string | null;
  now: number;
}

export interface CallbackOutboxStore {
  /**
   * Leases up to `limit` callbacks that are due at `now` to `owner` until
   * `now + leaseMs`, earliest first; a callback leased by another live owner is
   * skipped, so one replica sends each attempt. (SQLite, one process per file:
   * another owner's lease is a previous process's and is taken over at once.)
   */
  claimCallbacks(owner: string, now: number, leaseMs: number, limit: number): Promise<CallbackItem[]>;
  /** A failed attempt to retry at `nextAttemptAt`; releases the lease. False when `owner` lost it. */
  retryCallback(
    item: CallbackItem,
    owner: string,
    attempt: CallbackAttempt & { nextAttemptAt: number },
  ): Promise<boolean>;
  /**
   * Ends a callback as delivered or failed; with `alert` (docs/alerts.md), enqueues it in the same
   * transaction. False when `owner` lost the lease (nothing written); true when recorded, or,
   * with an alert, what became of it (`queued` or `suppressed`).
   */
  finishCallback(
    item: CallbackItem,
    owner: string,
    attempt: CallbackAttempt & { status: 'delivered' | 'failed'; alert?: NewAlert },
  ): Promise<boolean | AlertOutcome>;
}

/** A run as the run list shows it (docs/operating.md, "Admin API"): its RunView plus where it came from. */
export interface RunListView extends RunView {
  /** `hook:agent`, `hook:<mapping id>`, ... (a retry keeps its original's). */
  source: string;
  name: string | null;
  retryOf: string | null;
}

/**
 * A run as the run list's summary view shows it (docs/operating.md, "The run list's summary
 * view"): the list's fields, with the first line of the reply and of the error in place of the
 * texts themselves (`GET /api/runs/{id}` has them whole).
 */
export interface RunSummaryView extends Omit<RunListView, 'reply' | 'error'> {
  replyExcerpt: string | null;
  errorExcerpt: string | null;
}

export interface ListRunsOptions {
  status?: RunStatus;
  source?: string;
  /** Only runs accepted with this hook token id (docs/senders.md). */
  token?: string;
  /** Only runs accepted strictly before this run (paging). */
  before?: string;
  limit: number;
}

/** A page of the run list, newest first; `next` is the `before` of the next page, null on the last. */
export interface RunPage<View = RunListView> {
  runs: View[];
  next: string | null;
}

/**
 * A run's inputs as accepted, and where it stands: what a retry copies — all but `tokenId`, which
 * a retry sets to null (a retry is the operator's, not the sender's: docs/senders.md).
 */
export interface StoredRun {
  run: NewRun;
  status: RunStatus;
  /** The run's files without their bytes (empty for none); a retry copies them. */
  attachments: AttachmentInfo[];
}

/**
 * Which finished runs a bulk retry takes (docs/operating.md, "Bulk retry"): runs with this status,
 * of this source when given, that finished at or after `since` and strictly before `until` (ms
 * since the epoch), and that no run retries yet (no run's `retryOf` names them).
 */
export interface RetryableRunsOptions {
  status: 'failed' | 'timed_out';
  source?: string;
  since?: number;
  until?: number;
  /** At most this many runs are returned; `matched` counts them all. */
  limit: number;
}

/** The runs a bulk retry takes: the oldest `limit` first (by when they finished), and how many match in all. */
export interface RetryableRuns {
  matched: number;
  runs: StoredRun[];
}

/** An outbox item as the admin API shows it (`GET /api/deliveries`). */
export interface DeliveryView {
  id: string;
  /** The run whose reply this is; null for a heartbeat's reply (see `heartbeatId`). */
  runId: string | null;
  heartbeatId: string | null;
  /** Where it went once fixed; before that, as requested (`last`, and `to` null, possibly). */
  channel: string;
  to: string | null;
  status: 'pending' | 'delivered' | 'failed';
  /** Sending attempts so far, the last one included. */
  attempts: number;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ListDeliveriesOptions {
  status?: DeliveryView['status'];
  /** Only the deliveries of this run's reply (the run's page: docs/operating.md, "Admin API"). */
  runId?: string;
  limit: number;
}

/**
 * A completion callback as the admin API shows it (`GET /api/callbacks`). Only the URL's
 * origin: a caller's path or query may carry its own secret (docs/callers.md).
 */
export interface CallbackView {
  /** The `webhook-id` every attempt carried. */
  id: string;
  runId: string;
  /** `scheme://host[:port]` of the callback URL. */
  origin: string;
  /** `pending` from the run's acceptance until the callback ends, as on the RunView. */
  status: 'pending' | 'delivered' | 'failed';
  /** HTTP attempts so far. */
  attempts: number;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ListCallbacksOptions {
  status?: CallbackView['status'];
  limit: number;
}

/** What `redeliverRun` did. */
export type RedeliverResult = 'enqueued' | 'not_found' | 'nothing_to_deliver' | 'delivery_pending';

/** What the operators' API reads and does beyond the ingress (docs/operating.md, "Admin API"). */
export interface AdminStore {
  /** Newest first; `undefined` when `before` names no run. */
  listRuns(options: ListRunsOptions): Promise<RunPage | undefined>;
  /** The same page as `listRuns`, each run as its summary: no reply or error is read whole. */
  listRunSummaries(options: ListRunsOptions): Promise<RunPage<RunSummaryView> | undefined>;
  getStoredRun(runId: string): Promise<StoredRun | undefined>;
  /** One of a run's files with its bytes (`index` from 0, as the RunView lists them); undefined when none. */
  getAttachment(runId: string, index: number): Promise<Attachment | undefined>;
  /**
   * The finished runs a bulk retry would retry (`POST /api/runs/retry`), oldest first by
   * `finishedAt` (then by acceptance), with their inputs as `getStoredRun` reads them. Reads only:
   * the retries are committed through `accept`.
   */
  listRetryableRuns(options: RetryableRunsOptions): Promise<RetryableRuns>;
  /**
   * Puts a finished run's reply in the outbox again, to the route its last
   * delivery took, and sets its delivery record back to pending — in one transaction.
   */
  redeliverRun(runId: string, now: number): Promise<RedeliverResult>;
  /** Outbox items, newest first. */
  listDeliveries(options: ListDeliveriesOptions): Promise<DeliveryView[]>;
  /** Completion callbacks, newest first (read only: no admin action sends one again). */
  listCallbacks(options: ListCallbacksOptions): Promise<CallbackView[]>;
  /** A cheap round trip to the store; throws StoreUnavailableError when it does not answer. */
  ping(): Promise<void>;
  /**
   * Commits one tiny write (`/readyz`'s probe: one idempotency row of its own,
   * rewritten in place); throws StoreUnavailableError when the store cannot commit.
   */
  probeCommit(now: number): Promise<void>;
}

/**
 * A store is a set of parts, one per concern (docs/architecture.md): each
 * engine implements every part; callers take the part they use.
 */
export interface Store {
  /** The run queue: claims, leases, completions. */
  readonly runs: RunQueueStore;
  /** Transcripts, pending events, heartbeats, last routes. */
  readonly sessions: SessionStore;
  /** Replies waiting to be delivered. */
  readonly outbox: DeliveryOutboxStore;
  /** Completion callbacks waiting to be sent. */
  readonly callbacks: CallbackOutboxStore;
  /** What the operators' API reads and does, and the store's health. */
  readonly admin: AdminStore;
  accept(
    actions: Action[],
    render: (committed: Committed[]) => StoredAnswer,
    idempotency?: IdempotencyClaim,
  ): Promise<AcceptResult>;
  getRun(runId: string): Promise<RunView | undefined>;
  /**
   * Which of `runIds` are still queued or running, in one read whatever their number (the
   * streams' shared safety poll: ingress/run-completions.ts); a run not found is not among them.
   */
  unfinishedRuns(runIds: readonly string[]): Promise<Set<string>>;
  /** Oldest first; `undefined` when `after` names no event of that session. */
  listEvents(sessionKey: string, options: ListEventsOptions): Promise<EventView[] | undefined>;
  /** Marks these pending events of a session consumed (a heartbeat turn saw them); returns how many changed. */
  consumeEvents(sessionKey: string, eventIds: readonly string[], now: number): Promise<number>;
  /** How much work stands in the store now, for every replica together (the metrics' gauges). */
  counts(): Promise<StoreCounts>;
  pruneIdempotency(olderThan: number): Promise<number>;
  /**
   * One batch of retention (store/retention-rules.ts says what is prunable), in
   * one short transaction: up to `limit` rows of `kind` last touched before
   * `olderThan` (ms since the epoch) are deleted with what belongs only to them.
   */
  pruneBatch(kind: PruneKind, olderThan: number, limit: number): Promise<PruneBatch>;
  /** Work of a kind was committed here, or on another replica (committed.ts). */
  readonly committed: import('./committed.js').CommittedSignal;
  /**
   * Publishes a streamed run's reply piece to every replica (PostgreSQL NOTIFY;
   * streaming/run-deltas.ts). Absent on engines with one process per store.
   */
  sendDelta?(payload: string): Promise<void>;
  /** Calls `listener` with every piece any replica published (undefined after a reconnect). */
  watchDeltas?(listener: (payload: string | undefined) => void): () => void;
  /** The auth-failure count shared by replicas; absent on engines with one process per store. */
  readonly lockouts?: LockoutLedger;
  close(): Promise<void>;
}

/** What a retention batch prunes: finished runs (and old transcript entries), or consumed events (and finished heartbeats). */
export type PruneKind = 'runs' | 'events';

export interface PruneBatch {
  /** Runs or events deleted (what `agentgate_store_pruned_total{kind}` counts). */
  deleted: number;
  /** Whether another batch may find more to delete now (some part of this one was full). */
  more: boolean;
}

/** Work standing in the store (`Store.counts`). */
export interface StoreCounts {
  /** Runs with status `queued`. */
  runsQueued: number;
  /** Runs with status `running` (a lease expired by a dead replica included, until it is taken over). */
  runsRunning: number;
  /** Outbox items (replies) still to be delivered. */
  deliveriesPending: number;
}

/** The store cannot take the write now (locked, disk full, I/O error); nothing was written. */
export class StoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`store unavailable: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'StoreUnavailableError';
  }
}
