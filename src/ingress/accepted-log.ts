/**
 * The log line that starts a hook's trail (docs/operating.md, "Logs and correlation"): the
 * request's id next to what it committed. From here on every line about the
 * work carries the committed id — `runId` (worker, delivery, callback) or, for
 * a wake, `eventId`, which the heartbeat that sees it lists in `eventIds`.
 *
 * At debug, not info: one line per accepted request costs 2–4 µs with the
 * redacting logger (measured), up to a tenth of what a whole /hooks/wake costs.
 * At info the trail is still whole — it starts at the runId the answer gave
 * the caller, which every later line carries.
 */
import type { Logger } from '../log.js';
import type { Committed } from '../store/types.js';

export function logAccepted(
  log: Logger,
  reqId: string,
  hook: string,
  committed: readonly Committed[],
  /** The request's span, with tracing on (docs/tracing.md): the line carries its ids. */
  span?: { traceId: string; spanId: string },
): void {
  // Called per accepted request: build nothing when the line is off.
  if (!log.isLevelEnabled('debug')) return;
  const trace = span ? { trace_id: span.traceId, span_id: span.spanId } : {};
  log.debug({ reqId, hook, ...committedIds(committed), ...trace }, 'hook accepted');
}

/** `runId`/`eventId` for one, `runIds`/`eventIds` for a fan-out. */
function committedIds(committed: readonly Committed[]): Record<string, string | string[]> {
  const runIds: string[] = [];
  const eventIds: string[] = [];
  for (const item of committed) {
    if (item.kind === 'agent') runIds.push(item.runId);
    else eventIds.push(item.eventId);
  }
  const ids: Record<string, string | string[]> = {};
  if (runIds.length === 1) ids.runId = runIds[0] as string;
  else if (runIds.length > 1) ids.runIds = runIds;
  if (eventIds.length === 1) ids.eventId = eventIds[0] as string;
  else if (eventIds.length > 1) ids.eventIds = eventIds;
  return ids;
}
