/**
 * A run's row as both drivers read it back to run it or to retry it (the same column names
 * on SQLite and PostgreSQL), and what it reads as: a claimed run, a stored run.
 */
import { attachmentInfoOf } from './rows.js';
import type { ClaimedRun, RunStatus, StoredRun, WakeMode } from './types.js';

/** A flag column as a driver reads it: PostgreSQL's boolean, SQLite's 0 or 1. */
export type Flag = boolean | number;

export const isSet = (flag: Flag | undefined): boolean => flag === true || flag === 1;

/** A run's columns as a claim's lease (or a stored run's read) returns them. */
export interface QueuedRow {
  id: string;
  agent_id: string;
  session_key: string;
  main_session_key: string;
  name: string | null;
  message: string;
  model: string | null;
  thinking: string | null;
  timeout_seconds: number;
  wake_mode: WakeMode;
  deliver: Flag;
  channel: string;
  recipient: string | null;
  allow_unsafe: Flag;
  source: string;
  created_at: number;
  /** Never null after a lease (it sets it); a stored run's is not read. */
  started_at: number | null;
  /** As the row holds it after the lease: this claim counted. */
  attempts: number;
  trace_parent: string | null;
  /** runs.attachments (`attachmentsColumn`). */
  attachments: string | null;
  /** runs.stream; absent where a query does not read it. */
  stream?: Flag;
  /** runs.held_ms (store/rules/claim-hold.ts); absent where a query does not read it. */
  held_ms?: number | string;
  /** runs.hook_id and runs.token_id (a budget's scopes: docs/budgets.md); absent where not read. */
  hook_id?: string | null;
  token_id?: string | null;
}

export const toClaimedRun = (row: QueuedRow): ClaimedRun => ({
  id: row.id,
  agentId: row.agent_id,
  sessionKey: row.session_key,
  mainSessionKey: row.main_session_key,
  name: row.name,
  message: row.message,
  model: row.model,
  thinking: row.thinking,
  timeoutSeconds: row.timeout_seconds,
  wakeMode: row.wake_mode,
  deliver: isSet(row.deliver),
  channel: row.channel,
  to: row.recipient,
  allowUnsafeExternalContent: isSet(row.allow_unsafe),
  source: row.source,
  createdAt: row.created_at,
  startedAt: row.started_at ?? row.created_at,
  attempts: row.attempts,
  traceParent: row.trace_parent,
  attachmentInfo: attachmentInfoOf(row.attachments),
  heldMs: Number(row.held_ms ?? 0),
  // Only when set, so a run that does not stream looks as it always did.
  ...(isSet(row.stream) ? { stream: true } : {}),
  // Likewise: a budget's scopes (docs/budgets.md), only when the run has them.
  ...(row.hook_id ? { hookId: row.hook_id } : {}),
  ...(row.token_id ? { tokenId: row.token_id } : {}),
});

/** A run as an admin read takes it back (`runs.*` and its callback's URL), for a retry. */
export type StoredRunRow = QueuedRow & {
  status: RunStatus;
  retry_of: string | null;
  callback_url: string | null;
};

export function toStoredRun(row: StoredRunRow): StoredRun {
  const {
    startedAt: _startedAt,
    attempts: _attempts,
    heldMs: _heldMs,
    attachmentInfo: attachments,
    ...run
  } = toClaimedRun(row);
  return {
    run: { ...run, callbackUrl: row.callback_url, retryOf: row.retry_of, tokenId: row.token_id },
    status: row.status,
    attachments,
  };
}
