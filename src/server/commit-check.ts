/**
 * Whether the store can commit, as `/readyz` asks it (docs/operating.md, "Health and
 * readiness"). Reading is not enough: a full disk or a read-only store answers
 * `SELECT 1` while every write fails.
 *
 * Two kinds of evidence, the newer one wins:
 * - a write that failed with StoreUnavailableError (`writeFailed`, told by the HTTP
 *   layer), which makes the store count as failing at once;
 * - the probe (`Store.probeCommit`): one row rewritten in its own transaction.
 *
 * Either is trusted for `intervalMs`; after that the next `/readyz` probes again. So
 * the probe commits at most once per interval however often `/readyz` is asked (it is
 * unauthenticated: it must not let anyone drive writes), and a replica the load
 * balancer took out — which gets no hook traffic — still finds out by itself when the
 * store can commit again. Concurrent asks share one probe.
 */

/** How long one probe's outcome, or a failed write, answers `/readyz`; also its Retry-After. */
export const COMMIT_CHECK_INTERVAL_MS = 1000;

interface Evidence {
  at: number;
  /** Why the store cannot commit; undefined when it could. */
  problem: string | undefined;
}

export class CommitCheck {
  private last: Evidence | undefined;
  private probing: Promise<string | undefined> | undefined;
  /** Counts failed writes, so a probe that overlapped one does not overwrite it with a success. */
  private failures = 0;

  constructor(
    private readonly probe: (now: number) => Promise<void>,
    private readonly intervalMs = COMMIT_CHECK_INTERVAL_MS,
    private readonly clock: () => number = Date.now,
  ) {}

  /** A store write just failed: not ready until a later probe commits. */
  writeFailed(error: Error): void {
    this.failures++;
    this.last = { at: this.clock(), problem: `a write failed: ${error.message}` };
  }

  /** Why the store cannot commit now, or undefined when it can. */
  problem(): Promise<string | undefined> {
    const last = this.last;
    if (last && this.clock() - last.at < this.intervalMs) return Promise.resolve(last.problem);
    this.probing ??= this.runProbe().finally(() => {
      this.probing = undefined;
    });
    return this.probing;
  }

  private async runProbe(): Promise<string | undefined> {
    const at = this.clock();
    const failuresBefore = this.failures;
    let problem: string | undefined;
    try {
      await this.probe(at);
    } catch (error) {
      problem = (error as Error)?.message ?? String(error);
    }
    // A write that failed while the probe ran is at least as new as the probe's success.
    if (problem === undefined && this.failures !== failuresBefore) return this.last?.problem;
    this.last = { at, problem };
    return problem;
  }
}
