/**
 * `tools.approvalTimeout` (docs/operating.md, "Approving tool calls"): a tool call that waited
 * longer than this for an operator's decision is denied, as an operator's deny would be, and
 * its run is queued again. Every replica sweeps; the store's conditional decision lets each
 * deny through once, so two replicas sweeping together deny a call once.
 *
 * The sweep runs every `pollMs` (15 s by default): a call is denied at most that long after its
 * timeout. The timeout is read at each sweep, so a reloaded config applies from the next one;
 * "0" turns the timeout off (a call then waits until decided).
 */
import type { Logger } from '../log.js';
import { ScanLoop } from '../loops/scan-loop.js';
import type { RunStepsStore } from '../store/types.js';
import { systemClock, type TimerClock } from '../util/clock.js';
import { parseDuration } from '../util/duration.js';

export const APPROVAL_SWEEP_MS = 15_000;

export interface ApprovalTimeoutsOptions {
  pollMs?: number;
  clock?: TimerClock;
}

export class ApprovalTimeouts {
  private readonly loop: ScanLoop;
  private readonly clock: TimerClock;

  constructor(
    private readonly store: { steps: Pick<RunStepsStore, 'expireWaits'> },
    /** The current `tools.approvalTimeout` (a duration; "0" for none). */
    private readonly timeout: () => string,
    private readonly log: Logger,
    options: ApprovalTimeoutsOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.loop = new ScanLoop(() => this.sweep(), this.clock, options.pollMs ?? APPROVAL_SWEEP_MS);
  }

  start(): void {
    this.loop.start();
  }

  /** Sweeps now (tests). */
  notify(): void {
    this.loop.notify();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  private async sweep(): Promise<void> {
    const timeoutMs = parseDuration(this.timeout());
    if (timeoutMs === 0) return;
    const now = this.clock.now();
    try {
      const denied = await this.store.steps.expireWaits(now - timeoutMs, now);
      for (const runId of denied)
        this.log.warn(
          { runId, approvalTimeout: this.timeout() },
          'tool call denied: no decision within tools.approvalTimeout',
        );
    } catch (error) {
      this.log.error({ err: error }, 'approval timeout sweep failed; retrying on the next poll');
    }
  }
}
