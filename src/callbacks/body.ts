/**
 * The callback body (docs/callers.md, "What is sent"): the run's outcome as the RunView has it,
 * null fields present as null.
 */
import type { RunView } from '../store/types.js';

export function callbackBody(run: RunView): string {
  return JSON.stringify({
    type: 'run.finished',
    runId: run.runId,
    status: run.status,
    reply: run.reply,
    error: run.error,
    delivery: run.delivery,
    finishedAt: run.finishedAt,
    attachments: run.attachments,
  });
}
