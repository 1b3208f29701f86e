/**
 * The one way a background loop stops (docs/agent-runs.md, "Crashes and stops"):
 * no scan starts any more, the work in flight gets `graceMs` to finish, then
 * what is left is aborted with `reason` and waited for.
 */
import type { InFlight } from './in-flight.js';
import type { ScanLoop } from './scan-loop.js';

export async function stopWithGrace<M, K>(
  loop: Pick<ScanLoop, 'stop'>,
  work: InFlight<M, K>,
  graceMs: number,
  reason?: unknown,
): Promise<'finished' | 'aborted'> {
  const scanEnded = loop.stop();
  // The grace runs from the stop, not from the end of a scan still in progress.
  const drained = work.drain(graceMs, reason);
  await scanEnded;
  const outcome = await drained;
  // Started by that last scan after the grace began and outlasting it: cut now.
  return work.size > 0 ? work.drain(0, reason) : outcome;
}
