/**
 * The retention engine (docs/operating.md "Retention"): every
 * `store.retention.every` it prunes what the store's rules allow
 * (store/retention-rules.ts) — finished runs older than `store.retention.runs`,
 * consumed events older than `store.retention.events` — one small batch per
 * transaction, handing the event loop back between batches, so the ingress
 * keeps answering while a large backlog goes. A pass also runs at start.
 *
 * The horizon is fixed at the start of each kind's pass, so a pass ends even
 * under a load that keeps finishing runs. A failed batch ends its kind's pass (the
 * error is logged); the next pass starts over from the oldest rows left.
 */
import type { Logger } from '../log.js';
import { ScanLoop } from '../loops/scan-loop.js';
import type { PruneKind, Store } from '../store/types.js';
import { type Clock, systemClock } from '../util/clock.js';

export interface RetentionSettings {
  /** Finished runs and transcript entries older than this go; 0 keeps them forever. */
  runsMs: number;
  /** Consumed events and finished heartbeats older than this go; 0 keeps them forever. */
  eventsMs: number;
  /** Time between passes; 0 never prunes. */
  everyMs: number;
}

export interface RetentionEngineOptions {
  /** Called with each batch's count of deleted runs or events (agentgate_store_pruned_total). */
  onPruned?: (kind: PruneKind, count: number) => void;
  clock?: Pick<Clock, 'now' | 'setTimeout'>;
  /** Rows of each kind per transaction. */
  batchSize?: number;
}

/** Small enough that one batch holds SQLite's write lock for a few milliseconds. */
const DEFAULT_BATCH_SIZE = 256;

/** Lets I/O callbacks (requests, their group commits) run before the next batch. */
const yieldToIngress = () => new Promise<void>((resolve) => setImmediate(resolve));

export class RetentionEngine {
  private readonly loop: ScanLoop;
  private readonly clock: Pick<Clock, 'now' | 'setTimeout'>;
  private readonly batchSize: number;

  constructor(
    private readonly store: Pick<Store, 'pruneBatch'>,
    private readonly settings: RetentionSettings,
    private readonly log: Logger,
    private readonly options: RetentionEngineOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
    this.loop = new ScanLoop(
      async () => {
        await this.pass();
      },
      this.clock,
      settings.everyMs,
    );
  }

  /** Whether anything is ever pruned with these settings. */
  get enabled(): boolean {
    return this.settings.everyMs > 0 && (this.settings.runsMs > 0 || this.settings.eventsMs > 0);
  }

  start(): void {
    if (this.enabled) this.loop.start();
  }

  /** No batch starts after this; settles once the batch in progress has committed. */
  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One pass over both kinds; returns how many runs and events it deleted. */
  async pass(): Promise<Record<PruneKind, number>> {
    const pruned = { runs: 0, events: 0 };
    const kinds: [PruneKind, number][] = [
      ['runs', this.settings.runsMs],
      ['events', this.settings.eventsMs],
    ];
    for (const [kind, keepMs] of kinds) {
      if (keepMs <= 0 || this.loop.stopped) continue;
      try {
        pruned[kind] = await this.prune(kind, this.clock.now() - keepMs);
      } catch (error) {
        this.log.warn({ err: error, kind }, 'retention: pruning failed; the next pass tries again');
      }
    }
    if (pruned.runs + pruned.events > 0) this.log.debug({ pruned }, 'retention: pass done');
    return pruned;
  }

  private async prune(kind: PruneKind, olderThan: number): Promise<number> {
    let total = 0;
    for (;;) {
      const batch = await this.store.pruneBatch(kind, olderThan, this.batchSize);
      if (batch.deleted > 0) {
        total += batch.deleted;
        this.options.onPruned?.(kind, batch.deleted);
      }
      if (!batch.more || this.loop.stopped) return total;
      await yieldToIngress();
    }
  }
}
