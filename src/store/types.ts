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

/** A system event for a main session (CONTRACT §5 wake). */
export interface NewEvent {
  id: string;
  sessionKey: string;
  text: string;
  /** Where it came from, e.g. "hook:wake" or "hook:github". */
  source: string;
  wakeMode: WakeMode;
  ts: number;
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
}

export type Action = { kind: 'wake'; event: NewEvent } | { kind: 'agent'; run: NewRun };

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
}

export interface EventView {
  id: string;
  ts: string;
  text: string;
  source: string;
  status: EventStatus;
}

export interface ListEventsOptions {
  /** Only events after this event id. */
  after?: string;
  limit: number;
}

export interface Store {
  accept(
    actions: Action[],
    render: (committed: Committed[]) => StoredAnswer,
    idempotency?: IdempotencyClaim,
  ): Promise<AcceptResult>;
  getRun(runId: string): Promise<RunView | undefined>;
  /** Oldest first; `undefined` when `after` names no event of that session. */
  listEvents(sessionKey: string, options: ListEventsOptions): Promise<EventView[] | undefined>;
  /** Marks these pending events of a session consumed (a heartbeat turn saw them); returns how many changed. */
  consumeEvents(sessionKey: string, eventIds: readonly string[], now: number): Promise<number>;
  pruneIdempotency(olderThan: number): Promise<number>;
  close(): Promise<void>;
}

/** The store cannot take the write now (locked, disk full, I/O error); nothing was written. */
export class StoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`store unavailable: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'StoreUnavailableError';
  }
}
