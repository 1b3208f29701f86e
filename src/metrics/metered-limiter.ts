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

  fail(address: string): FailOutcome {
    const outcome = this.inner.fail(address);
    this.metrics.authFailed();
    if (outcome === 'locked') this.metrics.authLockedOut();
    return outcome;
  }

  succeed(address: string): void {
    this.inner.succeed(address);
  }

  sweep(): void {
    this.inner.sweep();
  }
}
