/**
 * The records the store's parts share (src/store/types.ts is the contract's one
 * entry): what a run and an event are made of when accepted, their statuses, a
 * transcript turn, a delivery's record and route.
 */

export type WakeMode = 'now' | 'next-heartbeat';

export type RunStatus = 'queued' | 'running' | 'waiting' | 'succeeded' | 'failed' | 'timed_out';

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
   * The hook that accepted it (docs/budgets.md): `agent`, a mapping's id, a preset's name; a
   * retry keeps its original's. Absent or null for none. Its budgets' scope `hook:<id>`.
   */
  hookId?: string | null;
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
