/**
 * Counts authentication failures and lockouts (agentgate_auth_failures_total,
 * agentgate_auth_lockouts_total) where every guard reports them: the limiter.
 * A wrapper rather than an edit of each guard, so a failure counted for the
 * lockout is always counted for the metrics too, whichever guard saw it.
 */
import type { AuthLimiter, FailOutcome, LockState } from '../auth/auth-limiter.js';
import type { GatewayMetrics } from './gateway-metrics.js';

export class MeteredLimiter implements AuthLimiter {
  constructor(
    private readonly inner: AuthLimiter,
    private readonly metrics: GatewayMetrics,
  ) {}

  check(address: string): LockState {
    return this.inner.check(address);
  }

  fail(address: string): FailOutcome | Promise<FailOutcome> {
    const outcome = this.inner.fail(address);
    return typeof outcome === 'string' ? this.count(outcome) : outcome.then((settled) => this.count(settled));
  }

  succeed(address: string): void {
    this.inner.succeed(address);
  }

  sweep(): void {
    this.inner.sweep();
  }

  /**
   * A refused failure (the address was locked by the time it was counted) is
   * answered 429 and is not a counted failure: summed over all replicas,
   * agentgate_auth_failures_total equals the 401s answered for failed tokens.
   */
  private count(outcome: FailOutcome): FailOutcome {
    if (outcome === 'refused') return outcome;
    this.metrics.authFailed();
    if (outcome === 'locked') this.metrics.authLockedOut();
    return outcome;
  }
}
