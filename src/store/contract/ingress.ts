/**
 * What the ingress writes and reads (docs/endpoints.md): `accept` commits actions (and
 * the idempotency record) atomically before any answer is sent; `getRun` and
 * `listEvents` read a run and a session's events back.
 */

import type { WaitingFor } from './steps.js';
import type { UsageView } from './usage.js';
import type {
  AttachmentInfo,
  CallbackStatus,
  DeliveryStatus,
  EventStatus,
  NewEvent,
  NewRun,
  RunStatus,
} from './values.js';

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
  /**
   * The model that answered — the last model call's, a fallback's when one was taken
   * (docs/agent-runs.md, "Fallbacks") — once the run finished; before, the one it was accepted with.
   */
  model: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  /**
   * A queued run held back until then (docs/agent-runs.md, "Provider limits"): no claim takes it
   * before; null otherwise.
   */
  notBefore: string | null;
  reply: string | null;
  error: string | null;
  delivery: { status: DeliveryStatus; channel: string | null; to: string | null; reason: string | null };
  /** `attempts` counts HTTP attempts, the successful one included. */
  callback: { status: CallbackStatus; attempts: number };
  /** The hook token that accepted the run (`default` for hooks.token); null when none did. */
  tokenId: string | null;
  /** The files given with the run (docs/attachments.md); empty when none. */
  attachments: AttachmentInfo[];
  /** The loop's committed steps (docs/operating.md, "A run's steps"); 0 for a run without tools. */
  steps: number;
  /** The tool call a `waiting` run waits on (docs/operating.md, "Approving tool calls"); null otherwise. */
  waitingFor: WaitingFor | null;
  /**
   * Its model calls' usage, summed, and their cost (docs/usage.md); written when the run
   * finishes (zeros before), `costUsd` null when its model has no price.
   */
  usage: UsageView;
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
