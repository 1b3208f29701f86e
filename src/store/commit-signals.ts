/**
 * Which commits signal which kind of work (committed.ts), the same on every
 * driver: the store gives each of its parts one `CommitSignals` at construction,
 * and a part tells it what a transaction that can make work due wrote, right
 * after that transaction committed; this says which kinds that made due and
 * emits them. A transaction emits each kind once, whatever it holds: a group
 * commit's accepts or completions wake a loop once (docs/architecture.md,
 * "Background loops").
 */
import { LocalCommits } from './committed.js';
import type {
  AcceptResult,
  Action,
  AlertCounts,
  AlertOutcome,
  CompletionOutcome,
  HeartbeatRecord,
  OutboxItem,
  RedeliverResult,
  RunCompletion,
} from './types.js';

export class CommitSignals {
  constructor(private readonly commits: LocalCommits) {}

  /** A group commit's accepts: their runs are queued, their wake-now events ask for their heartbeats. */
  accepted(batch: readonly { actions: readonly Action[] }[], results: readonly AcceptResult[]): void {
    let runs = false;
    const wakes = new Set<string>();
    for (const [index, { actions }] of batch.entries()) {
      if (results[index]?.kind !== 'committed') continue;
      for (const action of actions) {
        if (action.kind === 'agent') runs = true;
        else if (action.kind === 'wake' && action.event.wakeMode === 'now')
          wakes.add(action.event.sessionKey);
      }
    }
    if (runs) this.commits.emit('runs');
    if (wakes.size > 0) this.commits.emit('events', [...wakes]);
  }

  /**
   * A batch of runs' recorded ends (those that held their lease): their replies or
   * alerts in the outbox, their callbacks, their summaries' wakes.
   */
  runsFinished(
    batch: readonly { completion: RunCompletion }[],
    outcomes: readonly Pick<CompletionOutcome, 'recorded' | 'alert'>[],
  ): void {
    let outbox = false;
    let callbacks = false;
    let spend = false;
    const wakes = new Set<string>();
    for (const [index, { completion }] of batch.entries()) {
      const outcome = outcomes[index];
      if (!outcome?.recorded) continue;
      if (completion.spend && completion.spend.length > 0) spend = true;
      if (completion.delivery.status === 'pending' || outcome.alert === 'queued') outbox = true;
      // A run with nothing to deliver has its callback due now (one waiting for a delivery is not yet).
      callbacks = true;
      if (completion.summary.wakeMode === 'now') wakes.add(completion.summary.sessionKey);
    }
    if (outbox) this.commits.emit('outbox');
    if (callbacks) this.commits.emit('callbacks');
    if (wakes.size > 0) this.commits.emit('events', [...wakes]);
    if (spend) this.commits.emit('spend');
  }

  /** Runs put back in the queue (a release at a clean stop, orphans of a previous process). */
  runsRequeued(count: number): void {
    if (count > 0) this.commits.emit('runs');
  }

  /** A heartbeat's record: a reply to deliver is in the outbox. */
  heartbeatRecorded(record: HeartbeatRecord): void {
    if (record.status === 'succeeded' && record.delivery.status === 'pending') this.commits.emit('outbox');
    if (record.spend && record.spend.length > 0) this.commits.emit('spend');
  }

  /** A budget's alert, when this call was the one that raised it. */
  budgetAlerted(outcome: AlertOutcome | undefined): void {
    if (outcome === 'queued') this.commits.emit('outbox');
  }

  /** A delivery's end, with what became of its alert. */
  deliveryFinished(item: OutboxItem, alert: AlertOutcome | undefined): void {
    // A run's callback waits for its delivery to settle (docs/callers.md, "Completion callbacks").
    if (item.kind === 'run') this.commits.emit('callbacks');
    if (alert === 'queued') this.commits.emit('outbox');
  }

  /** The hour's alert summary, when there was one to write. */
  alertsSummarized(counts: AlertCounts | undefined): void {
    if (counts !== undefined) this.commits.emit('outbox');
  }

  /** A callback's last attempt, with its alert's outcome when it raised one. */
  callbackFinished(outcome: boolean | AlertOutcome): void {
    if (outcome === 'queued') this.commits.emit('outbox');
  }

  /** A run's reply put back in the outbox. */
  redelivered(result: RedeliverResult): void {
    if (result === 'enqueued') this.commits.emit('outbox');
  }
}

/** For a part used on its own, outside a store: no loop listens to it. */
export const NO_SIGNALS = new CommitSignals(new LocalCommits());
