/**
 * The answer of a `waitForCompletion` request (docs/callers.md, "Waiting in the answer"), built from the
 * accept answer (`{"ok":true,"runId"}`, or `"runIds"` for a fan-out) and the
 * runs as they stand when the wait ended:
 *
 * - finished: 200 `{"ok":true,"runId","status","reply","error","delivery":{…},"attachments":[…]}`
 * - not finished in time: 202 `{"ok":true,"runId","status"}`
 * - fan-out: the accept answer plus `"runs":[…]`, one entry per run in that
 *   shape; 200 once every run finished, else 202.
 *
 * Null fields are present as null.
 */
import type { RunView, StoredAnswer } from '../store/types.js';
import { isFinished } from './run-completions.js';

/** The runs an accept answer names, in order. */
export function runIdsOf(answer: StoredAnswer): string[] {
  const body = JSON.parse(answer.body) as { runId?: string; runIds?: string[] };
  if (typeof body.runId === 'string') return [body.runId];
  return Array.isArray(body.runIds) ? body.runIds : [];
}

function runResult(runId: string, view: RunView | undefined): Record<string, unknown> {
  if (view === undefined) return { runId, status: null };
  if (!isFinished(view)) return { runId, status: view.status };
  return {
    runId,
    status: view.status,
    reply: view.reply,
    error: view.error,
    delivery: view.delivery,
    attachments: view.attachments,
  };
}

export function waitAnswer(accepted: StoredAnswer, views: readonly (RunView | undefined)[]): StoredAnswer {
  const base = JSON.parse(accepted.body) as Record<string, unknown>;
  const status = views.every(isFinished) ? 200 : 202;
  if (typeof base.runId === 'string') {
    return { status, body: JSON.stringify({ ...base, ...runResult(base.runId, views[0]) }) };
  }
  const runIds = runIdsOf(accepted);
  const runs = runIds.map((runId, index) => runResult(runId, views[index]));
  return { status, body: JSON.stringify({ ...base, runs }) };
}

/**
 * The answer of runs just committed whose wait could not read them (the store failed):
 * each `queued`, as far as the request knows — 202, in the shape of `waitAnswer`'s.
 */
export function queuedAnswer(accepted: StoredAnswer): StoredAnswer {
  const base = JSON.parse(accepted.body) as Record<string, unknown>;
  if (typeof base.runId === 'string') {
    return { status: 202, body: JSON.stringify({ ...base, runId: base.runId, status: 'queued' }) };
  }
  const runs = runIdsOf(accepted).map((runId) => ({ runId, status: 'queued' }));
  return { status: 202, body: JSON.stringify({ ...base, runs }) };
}
