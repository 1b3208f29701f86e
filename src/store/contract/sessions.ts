/**
 * The store's sessions part (docs/architecture.md, "The store's parts"): transcripts,
 * pending events, heartbeats and their leases, last routes.
 */
import type { SpendCounter } from './budgets.js';
import type { RunUsage, UsageView } from './usage.js';
import type { DeliveryRecord, DeliveryRoute, TranscriptEntry, WakeMode } from './values.js';

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
  /** Its model calls' usage, summed (docs/usage.md); absent: none was made. */
  usage?: RunUsage;
  /**
   * The budgets' counters its usage is added to (docs/budgets.md), in the same transaction;
   * absent or empty with no budget that counts it.
   */
  spend?: SpendCounter[];
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
  /** Its model calls' usage and cost (docs/usage.md). */
  usage: UsageView;
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
