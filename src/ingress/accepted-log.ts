/**
 * The log line that starts a hook's trail (CONTRACT §9, issue 12 item 5): the
 * request's id next to what it committed. From here on every line about the
 * work carries the committed id — `runId` (worker, delivery, callback) or, for
 * a wake, `eventId`, which the heartbeat that sees it lists in `eventIds`.
 */
import type { Logger } from '../log.js';
import type { Committed } from '../store/types.js';

export function logAccepted(log: Logger, reqId: string, hook: string, committed: readonly Committed[]): void {
  // Called per accepted request: build nothing when info is off (the benchmark runs at warn).
  if (!log.isLevelEnabled('info')) return;
  log.info({ reqId, hook, ...committedIds(committed) }, 'hook accepted');
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
