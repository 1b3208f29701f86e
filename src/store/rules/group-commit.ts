/**
 * Group commit, the same on every driver: work submitted during one event-loop
 * turn is committed in one transaction, one batch at a time (a batch waiting
 * for its commit lets the next one grow). A transaction's fixed cost — the
 * commit's WAL write on SQLite, the round trips on PostgreSQL — is then paid
 * once per batch instead of once per request, run or completion.
 *
 * Should a batch fail, nothing of it was written (its transaction rolled back):
 * each item is replayed in a transaction of its own, so one bad item never
 * takes the others down and none is left half-written. See docs/architecture.md.
 */

interface Pending<I, R> {
  item: I;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

export interface GroupCommitOptions {
  /** What a failed item is rejected with (the driver's StoreUnavailableError). */
  wrapError: (error: unknown) => unknown;
  /** Told of every failed transaction, before the replay (caches drop what they hold). */
  onFailure?: (error: unknown) => void;
}

export class GroupCommit<I, R> {
  private pending: Pending<I, R>[] = [];
  private scheduled = false;
  private flushing: Promise<void> | undefined;

  constructor(
    /** Commits the items in one transaction; returns their results in order. */
    private readonly commit: (items: readonly I[]) => R[] | Promise<R[]>,
    private readonly options: GroupCommitOptions,
  ) {}

  submit(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Settles once everything submitted so far is committed or refused. */
  async drain(): Promise<void> {
    while (this.pending.length > 0 || this.flushing || this.scheduled) {
      if (this.flushing) await this.flushing;
      else if (this.pending.length > 0) await this.flush();
      else await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private schedule(): void {
    if (this.scheduled || this.flushing || this.pending.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (!this.flushing) void this.flush();
    });
  }

  private flush(): Promise<void> {
    const run = this.commitPending().finally(() => {
      this.flushing = undefined;
      this.schedule();
    });
    this.flushing = run;
    return run;
  }

  private async commitPending(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    let results: R[];
    try {
      results = await this.commit(batch.map((p) => p.item));
    } catch (batchError) {
      this.options.onFailure?.(batchError);
      if (batch.length === 1) {
        (batch[0] as Pending<I, R>).reject(this.options.wrapError(batchError));
        return;
      }
      for (const one of batch) {
        try {
          const [result] = await this.commit([one.item]);
          one.resolve(result as R);
        } catch (error) {
          this.options.onFailure?.(error);
          one.reject(this.options.wrapError(error));
        }
      }
      return;
    }
    for (const [index, one] of batch.entries()) one.resolve(results[index] as R);
  }
}
