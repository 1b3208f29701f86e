/**
 * The budget book (docs/budgets.md): each budget's current window, its spend there, its limit,
 * when the window resets and whether it is exceeded — kept in memory, so the door checks a
 * request with no store read. It is read again from the store (the spend is counted there,
 * docs/budgets.md "Where the spend is counted"): after every local commit that added spend (the
 * store's `spend` signal), every `pollMs` for what other replicas added (1 s on PostgreSQL), and
 * at each window's end. The worker's check before a run executes reads the store itself
 * (`holdUntil`), so the book's lag never lets a queued run start over a spent budget.
 *
 * A budget that becomes exceeded is told to `onExceeded` once per window by this process
 * (budget-alerts.ts makes it one alert per window across replicas).
 */
import type { Logger } from '../log.js';
import { ScanLoop } from '../loops/scan-loop.js';
import type {
  BudgetStore,
  BudgetWindow,
  CommittedSignal,
  SpendAmount,
  SpendCounter,
} from '../store/types.js';
import type { Clock } from '../util/clock.js';
import { type Budget, counterOf, countersFor, endOf, reached } from './scopes.js';

/** A budget as `GET /api/budgets` shows it. */
export interface BudgetState {
  id: string;
  scope: string;
  window: BudgetWindow;
  limit: Budget['limit'];
  spent: SpendAmount;
  /** The current window's start and end (ms since the epoch); the end is when it resets. */
  start: number;
  resetsAt: number;
  exceeded: boolean;
}

export interface BudgetBookDeps {
  store: { budgets: BudgetStore; committed: CommittedSignal };
  clock: Clock;
  log: Logger;
  /** How often the spend is read again for other replicas' commits (PostgreSQL: 1 s). */
  pollMs: number;
  /** A budget found exceeded, once per window in this process. */
  onExceeded?: (state: BudgetState) => Promise<void>;
}

export class BudgetBook {
  private current: BudgetState[] = [];
  /** The exceeded budgets only: what the door looks through. */
  private exceeded: BudgetState[] = [];
  /** `<budget id> <window start>` of the exceeded budgets already told to `onExceeded`. */
  private readonly told = new Set<string>();
  private readonly loop: ScanLoop;

  constructor(
    readonly budgets: readonly Budget[],
    private readonly deps: BudgetBookDeps,
  ) {
    this.loop = new ScanLoop(() => this.refresh(), deps.clock, deps.pollMs, {
      wakeOn: { signal: deps.store.committed, kinds: ['spend'] },
      deferred: true,
    });
  }

  /** Reads the spend once before answering any request, then keeps it current. */
  async start(): Promise<void> {
    await this.refresh();
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** The counters a spend at `at` in these scopes is added to (none without a budget of them). */
  countersFor(scopes: readonly string[], at: number): SpendCounter[] {
    return countersFor(this.budgets, scopes, at);
  }

  /** Every budget as last read, in config order. */
  states(): BudgetState[] {
    return this.current;
  }

  /**
   * The exceeded budget that refuses a request in these scopes now, the one whose window ends
   * last when several do (the request may pass only once all have reset); undefined to let it in.
   * In memory: no store read.
   */
  refusal(scopes: () => readonly string[], now: number): BudgetState | undefined {
    if (this.exceeded.length === 0) return undefined;
    const mine = scopes();
    let refusing: BudgetState | undefined;
    for (const state of this.exceeded) {
      if (state.resetsAt <= now || !mine.includes(state.scope)) continue;
      if (!refusing || state.resetsAt > refusing.resetsAt) refusing = state;
    }
    return refusing;
  }

  /**
   * When a run in these scopes may start, read from the store now: the end of the latest window
   * among its exceeded budgets; undefined when none is exceeded (or no budget concerns it).
   */
  async holdUntil(scopes: readonly string[], now: number): Promise<number | undefined> {
    const concerned = this.budgets.filter((budget) => scopes.includes(budget.scope));
    if (concerned.length === 0) return undefined;
    const counters = concerned.map((budget) => counterOf(budget, now));
    const spent = await this.deps.store.budgets.readSpend(counters);
    let until: number | undefined;
    concerned.forEach((budget, index) => {
      const counter = counters[index] as SpendCounter;
      if (!reached(budget.limit, spent[index] as SpendAmount)) return;
      const end = endOf(counter);
      if (until === undefined || end > until) until = end;
    });
    return until;
  }

  /**
   * Reads every budget's current window again; a failed read keeps the last states (with
   * `strict`, it throws: an answer must not show a stale spend as current).
   */
  async refresh(options: { strict?: boolean } = {}): Promise<void> {
    const now = this.deps.clock.now();
    const counters = this.budgets.map((budget) => counterOf(budget, now));
    let spent: SpendAmount[];
    try {
      spent = await this.deps.store.budgets.readSpend(counters);
    } catch (error) {
      if (options.strict) throw error;
      this.deps.log.warn({ err: error }, 'reading the budgets’ spend failed; retrying');
      return;
    }
    this.current = this.budgets.map((budget, index) => {
      const counter = counters[index] as SpendCounter;
      const amount = spent[index] as SpendAmount;
      return {
        id: budget.id,
        scope: budget.scope,
        window: budget.window,
        limit: budget.limit,
        spent: amount,
        start: counter.start,
        resetsAt: endOf(counter),
        exceeded: reached(budget.limit, amount),
      };
    });
    this.exceeded = this.current.filter((state) => state.exceeded);
    // The next window starts clean: read again right at its start (the door also ignores a
    // state whose window is over, so nothing waits on this timer).
    const next = Math.min(...this.current.map((state) => state.resetsAt));
    this.loop.wakeBy(next);
    for (const state of this.exceeded) await this.tell(state);
  }

  private async tell(state: BudgetState): Promise<void> {
    const key = `${state.id} ${state.start}`;
    if (this.told.has(key) || !this.deps.onExceeded) return;
    try {
      await this.deps.onExceeded(state);
      this.told.add(key);
    } catch (error) {
      // Told again at the next refresh: the store makes it one alert however often it is asked.
      this.deps.log.warn({ err: error, budget: state.id }, 'raising a budget alert failed; retrying');
    }
  }
}
