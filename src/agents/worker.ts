/**
 * Executes queued agent runs (docs/agent-runs.md).
 * Runs are leased from the store, at most `agents.defaults.maxConcurrent` at
 * once; runs sharing a session key are leased one at a time, in order, by the
 * store's claim, which also shares the free slots fairly between hooks and
 * holds each to its `maxConcurrentRuns` (docs/callers.md, "Per-hook limits";
 * store/fair-share.ts). The worker is a scan loop (loops/scan-loop.ts) woken by
 * the store's `runs` commits, here or on another replica, and its poll. A run
 * ends succeeded, failed or timed_out; its result, transcript turn and summary
 * event are committed together, and that commit's signal wakes the heartbeat
 * (`wakeMode: "now"`), the delivery and the callback. On stop, running turns get
 * a grace period, then are aborted and put back in the queue for the next start.
 */

import { runScopes } from '../budgets/scopes.js';
import type { ResolvedAgent, ResolvedConfig } from '../config/resolved.js';
import type { Logger } from '../log.js';
import { InFlight } from '../loops/in-flight.js';
import { ScanLoop } from '../loops/scan-loop.js';
import { stopWithGrace } from '../loops/stop-with-grace.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import { type SpanStarter, traced, type WorkSpan } from '../observability/work-span.js';
import type { StepsStore } from '../store/contract/steps.js';
import { combineHolds } from '../store/rules/claim-hold.js';
import {
  type AlertOutcome,
  type ClaimedRun,
  type ClaimHold,
  type DeliveryRecord,
  type NewAlert,
  type RunCompletion,
  type SpendCounter,
  type Store,
  StoreUnavailableError,
} from '../store/types.js';
import type { RunDeltaWriter } from '../streaming/run-deltas.js';
import type { ToolSource } from '../tools/types.js';
import { type Clock, systemClock } from '../util/clock.js';
import { uuidv7 } from '../util/ids.js';
import { userTurnOf } from './attachments.js';
import { isHeartbeatAck } from './heartbeat-protocol.js';
import type { ModelRouter } from './models.js';
import { ownerAliveChecker } from './owner.js';
import { firstProviderOf, providerHold } from './provider-hold.js';
import { type ProviderLimits, RunRateLimited } from './provider-limits.js';
import type { ThinkingLevel } from './providers/types.js';
import { runToolsFor } from './run-tools.js';
import { type ApproveTool, RunParked } from './tool-approval.js';
import type { ToolCallMetrics } from './tool-loop.js';
import { type RetryPolicy, runTurn } from './turn.js';
import { meterFor, UsageMeter, type UsageMetrics } from './usage-meter.js';

/** Longest reply quoted in a summary event. */
const SUMMARY_MAX_CHARS = 4000;

/**
 * A run claimed this many times without ever finishing or being released by a
 * clean stop took the gateway down with it each time (a kill, a crash, memory):
 * it is failed instead of being run again.
 */
export const MAX_INTERRUPTED_ATTEMPTS = 3;

/**
 * How often a finished run's result is offered to a store that refuses it
 * (StoreUnavailableError: busy past its timeout, a full disk, PostgreSQL
 * unreachable), with the wait before each retry: about 20 s in all, within the
 * run's lease, which the worker keeps renewing while the run is in its hands
 * (docs/agent-runs.md, "Crashes and stops").
 */
export const COMPLETION_RETRY_DELAYS_MS = [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000];

export interface WorkerDeps {
  store: Store;
  config: ResolvedConfig;
  models: ModelRouter;
  log: Logger;
  owner: string;
  leaseMs?: number;
  pollMs?: number;
  /** Retries of transient provider errors within a turn (defaults in turn.ts). */
  providerRetry?: RetryPolicy;
  /** Time for leases, run timeouts, polls and the stop grace (tests pass a manual one). */
  clock?: Clock;
  /** Counts finished runs and their durations, and model calls' usage (docs/operating.md, "Metrics"). */
  metrics?: Pick<GatewayMetrics, 'runFinished'> &
    Partial<UsageMetrics> &
    Partial<Pick<GatewayMetrics, 'runDeferred'>>;
  /**
   * Provider limits (docs/agent-runs.md, "Provider limits"), shared with the heartbeats: runs of a
   * provider at its `maxConcurrent` or rate limited stay queued, each model call waits for its
   * provider's slot, and a 429 that outlasts the retries puts the run back. Absent: none.
   */
  limits?: ProviderLimits;
  /**
   * Runs the claims leave queued for other reasons than providers (asked at every claim, joined
   * with the providers' hold); absent: none.
   */
  claimHold?: () => ClaimHold | undefined;
  /**
   * Each run source's `maxConcurrentRuns` (docs/callers.md, "Per-hook limits"), asked at
   * every claim so a config reload applies to the next claim; absent means no caps.
   */
  runCaps?: (source: string) => number | undefined;
  /** Told each run this worker recorded as finished (a waiting request answers at once). */
  onRunFinished?: (runId: string) => void;
  /** With tracing on, each execution is a span continuing its hook request's trace (docs/tracing.md). */
  tracing?: SpanStarter;
  /** Alerts (docs/alerts.md): a failed or timed-out run's alert is committed with its result. */
  alerts?: RunAlerts;
  /**
   * Where a streamed run's reply pieces go (docs/callers.md, "Streamed answers"); absent:
   * streamed runs are executed as any other.
   */
  deltas?: {
    open(runId: string): RunDeltaWriter;
    /** After the run's result is committed: the streams on other replicas learn it finished. */
    finished(runId: string): void;
  };
  /** MCP tools (docs/agent-runs.md, "Tools"): an agent with `tools` gets each run's set here; absent: none. */
  tools?: ToolSource;
  /** Where tool loops commit their steps (docs/agent-runs.md, "Tools"); absent: in memory only. */
  steps?: StepsStore;
  /** Decides a run's tool calls that need approval (agents/tool-approval.ts); absent: not available. */
  approveTool?: (run: ClaimedRun) => ApproveTool;
  /** Counts tool calls (docs/operating.md, "Metrics"). */
  toolMetrics?: ToolCallMetrics;
  /**
   * The config in force, for what a reload changes at once (a mapping's `tools`); absent: the
   * config the worker was built with.
   */
  currentConfig?: () => ResolvedConfig;
  /** The budgets (docs/budgets.md); absent with none configured: no check, no spend written. */
  budgets?: RunBudgets;
}

/** What the worker asks of the budgets (budgets/book.ts). */
export interface RunBudgets {
  /** When a run in these scopes may start, read from the store now; undefined: it may now. */
  holdUntil(scopes: readonly string[], now: number): Promise<number | undefined>;
  /** The counters a run's usage is added to with its completion. */
  countersFor(scopes: readonly string[], at: number): SpendCounter[];
}

/** What the worker asks of alerts (alerts/alerts.ts). */
export interface RunAlerts {
  forRun(
    run: { id: string; source: string; name: string | null },
    status: 'failed' | 'timed_out',
    error: string | null,
  ): NewAlert | undefined;
  recorded(alert: NewAlert, outcome: AlertOutcome | undefined): void;
}

class Shutdown extends Error {}
class RunTimeout extends Error {}

export class RunWorker {
  /** The runs executing now, by id. */
  private readonly active: InFlight;
  private readonly agents: Map<string, ResolvedAgent>;
  private readonly leaseMs: number;
  private readonly maxConcurrent: number;
  private readonly clock: Clock;
  private readonly loop: ScanLoop;
  private stopRenewals = () => {};
  private stopFreed = () => {};
  private readonly pollMs: number;
  /** When the claims may next read the earliest deferral (wakeForDeferred). */
  private deferralsReadAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly deps: WorkerDeps) {
    this.agents = new Map(deps.config.agents.list.map((agent) => [agent.id, agent]));
    this.leaseMs = deps.leaseMs ?? 60_000;
    this.maxConcurrent = deps.config.agents.defaults.maxConcurrent;
    this.clock = deps.clock ?? systemClock;
    this.active = new InFlight(this.clock);
    // Deferred: the accepts of one group commit signal in one turn and cost one claim.
    this.pollMs = deps.pollMs ?? 1000;
    this.loop = new ScanLoop(() => this.claim(), this.clock, this.pollMs, {
      wakeOn: { signal: deps.store.committed, kinds: ['runs'] },
      deferred: true,
    });
  }

  private get stopping(): boolean {
    return this.loop.stopped;
  }

  async start(): Promise<void> {
    const orphans = await this.deps.store.runs.requeueOrphans(ownerAliveChecker(this.deps.owner));
    if (orphans.length > 0)
      this.deps.log.info({ runs: orphans.length }, 'resuming runs of a previous process');
    this.stopRenewals = this.clock.setInterval(() => this.renewLeases(), this.leaseMs / 3);
    // A provider's slot freed up: the runs the claims held for it may start.
    this.stopFreed = this.deps.limits?.onFreed(() => this.notify()) ?? (() => {});
    this.loop.start();
  }

  /** Looks for runnable runs soon (a run finished and its completion claimed nothing). */
  notify(): void {
    this.loop.notify();
  }

  /** Claims for the free slots, again while each claim filled them all. */
  private async claim(): Promise<void> {
    try {
      for (;;) {
        const capacity = this.maxConcurrent - this.active.size;
        if (capacity <= 0 || this.stopping) return;
        const runs = await this.deps.store.runs.claimRuns(
          this.deps.owner,
          this.clock.now(),
          this.leaseMs,
          capacity,
          this.deps.runCaps,
          this.claimHoldNow(),
        );
        for (const run of runs) this.launch(run);
        if (runs.length < capacity) return await this.wakeForDeferred();
      }
    } catch (error) {
      this.deps.log.error({ err: error }, 'claiming runs failed; retrying on the next poll');
    }
  }

  /**
   * A claim that found less than it could take may have left runs deferred until a time
   * (docs/agent-runs.md, "Provider limits"), on another replica or before a restart: the loop
   * looks again at the earliest, not only at its next poll. Read at most once per poll, so a
   * claim woken by each accept does not pay a read more; this worker's own deferrals set the
   * timer themselves (`defer`).
   */
  private async wakeForDeferred(): Promise<void> {
    const now = this.clock.now();
    if (now < this.deferralsReadAt) return;
    this.deferralsReadAt = now + this.pollMs;
    const at = await this.deps.store.runs.nextNotBefore(now);
    if (at !== null) this.loop.wakeBy(at);
  }

  /**
   * The runs a claim leaves queued: for the providers' sake, by the config in force
   * (provider-hold.ts), and whatever `claimHold` adds.
   */
  private claimHoldNow(): ClaimHold | undefined {
    const limits = this.deps.limits;
    const config = this.deps.currentConfig?.() ?? this.deps.config;
    const providers = limits ? providerHold(config, this.deps.models, limits) : undefined;
    return combineHolds(providers, this.deps.claimHold?.());
  }

  /**
   * A place among its provider's calls for a run about to start, dropped at its first call; false
   * when the provider is at its cap (one claim may take several runs of a provider at once).
   */
  private reserveProvider(run: ClaimedRun): (() => void) | false {
    const limits = this.deps.limits;
    if (!limits) return () => {};
    const config = this.deps.currentConfig?.() ?? this.deps.config;
    const provider = firstProviderOf(config, this.deps.models, run);
    if (provider === undefined) return () => {};
    if (limits.atCap(provider)) return false;
    return limits.reserve(provider);
  }

  private launch(run: ClaimedRun): void {
    // Leased again by this same worker (its lease ran out while renewals failed): the turn
    // already running here goes on; a second one would call the model twice.
    if (this.active.has(run.id)) return;
    const reservation = this.reserveProvider(run);
    if (reservation === false) {
      // Back in the queue, not an attempt: it starts when its provider has room.
      this.deps.log.debug({ runId: run.id }, 'run handed back: its provider is at maxConcurrent');
      void this.handBack([run]);
      return;
    }
    this.deps.log.debug({ runId: run.id, source: run.source, attempt: run.attempts }, 'run started');
    void this.active.track(run.id, async (stop) => {
      const next = await this.execute(run, stop, reservation)
        .catch((error): ClaimedRun[] | undefined => {
          this.deps.log.error({ err: error, runId: run.id }, 'run bookkeeping failed');
          return undefined;
        })
        .finally(reservation);
      // Claimed as the stop began: handed back, as a stop hands back running turns.
      if (this.stopping) await this.handBack(next ?? []);
      else for (const nextRun of next ?? []) this.launch(nextRun);
      // A completion that claimed for its slot and found less than it asked saw the
      // queue empty in that transaction: new work wakes the worker when it arrives.
      if (next === undefined) this.notify();
    });
  }

  /**
   * Runs the turn and records it; returns the runs claimed for the freed slot in
   * the completion's transaction, or undefined when none was asked for. With
   * tracing on, all of it — the model calls, the log lines — is inside the run's span.
   */
  private async execute(
    run: ClaimedRun,
    stop: AbortSignal,
    reservation: () => void,
  ): Promise<ClaimedRun[] | undefined> {
    const span = () => ({
      kind: 'consumer' as const,
      parent: run.traceParent,
      attributes: {
        'agentgate.run_id': run.id,
        'agentgate.hook': run.source,
        'agentgate.agent_id': run.agentId,
        'agentgate.attempt': run.attempts,
        // How long it waited in the durable queue, from its acceptance to this claim.
        'agentgate.queue_wait_ms': Math.max(0, run.startedAt - run.createdAt),
      },
    });
    return traced(this.deps.tracing, 'agentgate.run', span, (runSpan) =>
      this.executeTraced(run, stop, runSpan, reservation),
    );
  }

  private async executeTraced(
    run: ClaimedRun,
    stop: AbortSignal,
    span: WorkSpan | undefined,
    reservation: () => void,
  ): Promise<ClaimedRun[] | undefined> {
    const { store, log, owner } = this.deps;
    if (run.attempts > MAX_INTERRUPTED_ATTEMPTS) return this.giveUp(run, span);
    if (await this.heldByBudget(run, span)) return undefined;
    const agent =
      this.agents.get(run.agentId) ??
      (this.agents.get(this.deps.config.agents.defaultAgentId) as ResolvedAgent);
    const timeout = new AbortController();
    const signal = AbortSignal.any([stop, timeout.signal]);
    const cancelTimeout = this.clock.setTimeout(
      () => timeout.abort(new RunTimeout()),
      run.timeoutSeconds * 1000,
    );
    let status: 'succeeded' | 'failed' | 'timed_out';
    let reply: string | null = null;
    let error: string | null = null;
    let userTurn: string | null = null;
    // A streamed run: its pieces are published as they come, and all of them before its result
    // is recorded, so a stream shows them before its `finished` event.
    const deltas = run.stream ? this.deps.deltas?.open(run.id) : undefined;
    // Every model call's usage, whatever the outcome: a failed run's calls cost as much.
    const usage = new UsageMeter(meterFor(this.deps.metrics));
    try {
      const turn = await userTurnOf(store, run, { signal });
      userTurn = turn.transcript;
      const config = this.deps.currentConfig?.() ?? this.deps.config;
      const tools = await runToolsFor(this.deps, config, run, agent, this.deps.approveTool?.(run));
      reply = await runTurn(
        {
          store,
          models: this.deps.models,
          toolMetrics: this.deps.toolMetrics,
          retry: this.deps.providerRetry,
          onRetry: (failure, delayMs, call) =>
            log.warn(
              { runId: run.id, error: failure.message, delayMs, call },
              'provider call failed; retrying',
            ),
          onFallback: (failure, from, to) =>
            log.warn(
              { runId: run.id, from, to, status: failure.status, error: failure.message },
              'model call failed; falling back',
            ),
          span,
          usage,
          ...(this.deps.limits ? { gate: this.deps.limits.forRun(reservation) } : {}),
        },
        {
          agent,
          model: run.model,
          sessionKey: run.sessionKey,
          userTurn: turn.text,
          attachments: turn.attachments,
          thinking: run.thinking as ThinkingLevel | null,
          signal,
          ...(deltas ? { onDelta: (text: string) => deltas.push(text) } : {}),
          ...(tools ? { tools } : {}),
        },
      );
      status = 'succeeded';
    } catch (failure) {
      const reason = signal.reason;
      if (failure instanceof RunParked) return this.parked(run, failure, span);
      if (failure instanceof RunRateLimited && !signal.aborted) {
        const deferred = await this.defer(run, failure, span);
        if (deferred) return undefined;
        status = 'failed';
        error = rateLimitedError(run, failure, this.clock.now());
        return this.record(run, status, reply, error, userTurn, span, usage);
      }
      if (reason instanceof Shutdown) {
        await store.runs.releaseRun(run.id, owner);
        span?.setAttributes({ 'agentgate.interrupted': true });
        log.info({ runId: run.id }, 'run interrupted by shutdown; it will resume on the next start');
        return undefined;
      }
      status = reason instanceof RunTimeout ? 'timed_out' : 'failed';
      error = status === 'timed_out' ? `timed out after ${run.timeoutSeconds} s` : (failure as Error).message;
    } finally {
      cancelTimeout();
      await deltas?.finish();
    }

    return this.record(run, status, reply, error, userTurn, span, usage);
  }

  /**
   * A run whose loop stopped for an approval (docs/operating.md, "Approving tool calls"): its
   * status and lease were written with the wait, so nothing is recorded here; the slot is free.
   */
  private parked(run: ClaimedRun, parked: RunParked, span: WorkSpan | undefined): undefined {
    span?.setAttributes({ 'agentgate.parked': parked.why });
    if (parked.why === 'waiting') this.deps.log.info({ runId: run.id }, 'run waits for an approval');
    else this.deps.log.warn({ runId: run.id }, 'run lost its lease while asking for an approval');
    return undefined;
  }

  /**
   * Puts a rate-limited run back in the queue until its providers take calls again
   * (docs/agent-runs.md, "Provider limits"): not an attempt, and its slot is free meanwhile.
   * False when that would hold it back longer than its timeout in all: it fails instead.
   */
  private async defer(
    run: ClaimedRun,
    limited: RunRateLimited,
    span: WorkSpan | undefined,
  ): Promise<boolean> {
    const now = this.clock.now();
    const waitMs = Math.max(0, limited.until - now);
    if (run.heldMs + waitMs > run.timeoutSeconds * 1000) return false;
    const { log, owner } = this.deps;
    const deferred = await this.deps.store.runs.deferRun(run.id, owner, limited.until, now);
    span?.setAttributes({ 'agentgate.deferred_until_ms': limited.until });
    if (!deferred) {
      log.warn({ runId: run.id }, 'run lost its lease before it could be put back for a rate limit');
      return true;
    }
    this.deps.metrics?.runDeferred?.(limited.provider);
    log.info(
      {
        runId: run.id,
        provider: limited.provider,
        notBefore: new Date(limited.until).toISOString(),
        heldMs: run.heldMs + waitMs,
      },
      'provider rate limited; run put back in the queue',
    );
    this.loop.wakeBy(limited.until);
    return true;
  }

  /**
   * A run in a scope whose budget is spent for its window waits, queued, until that window ends
   * (docs/budgets.md): put back before any model call, not counted as an attempt, not claimed
   * again before then. The spend is read from the store now (one read), so the budget book's
   * lag never lets a run start over a spent budget. A budget's wait is not a provider's hold:
   * the run's held time (docs/agent-runs.md, "Provider limits") does not grow by it.
   */
  private async heldByBudget(run: ClaimedRun, span: WorkSpan | undefined): Promise<boolean> {
    const { budgets, store, log, owner } = this.deps;
    if (!budgets) return false;
    const until = await budgets.holdUntil(runScopes(run), this.clock.now());
    if (until === undefined) return false;
    const deferred = await store.runs.deferRun(run.id, owner, until, until);
    span?.setAttributes({ 'agentgate.budget_wait_until': new Date(until).toISOString() });
    if (deferred)
      log.info({ runId: run.id, until: new Date(until).toISOString() }, 'run waits: its budget is spent');
    else log.warn({ runId: run.id }, 'run lost its lease while waiting for its budget');
    return true;
  }

  /** Fails a run that was interrupted too often, without calling the model again. */
  private async giveUp(run: ClaimedRun, span: WorkSpan | undefined): Promise<ClaimedRun[] | undefined> {
    const error =
      `the gateway stopped unexpectedly ${MAX_INTERRUPTED_ATTEMPTS} times while running this run ` +
      '(killed, crashed or out of memory); it is not tried again';
    this.deps.log.error(
      { runId: run.id, attempts: run.attempts - 1 },
      'run failed after repeated interruptions',
    );
    return this.record(run, 'failed', null, error, null, span);
  }

  private async record(
    run: ClaimedRun,
    status: 'succeeded' | 'failed' | 'timed_out',
    reply: string | null,
    error: string | null,
    userTurn: string | null,
    span: WorkSpan | undefined,
    usage?: UsageMeter,
  ): Promise<ClaimedRun[] | undefined> {
    const { log, owner } = this.deps;
    const delivery = initialDelivery(run, status, reply);
    const finishedAt = this.clock.now();
    // Its delivery, callback and summary event continue the trace from the run's span.
    const traceParent = span?.traceparent ?? null;
    if (span) {
      span.setAttributes({ 'agentgate.status': status });
      if (status !== 'succeeded') span.fail(error ?? status, status === 'timed_out' ? 'timeout' : 'failed');
    }
    const completion: RunCompletion = {
      runId: run.id,
      owner,
      sessionKey: run.sessionKey,
      status,
      reply,
      error,
      finishedAt,
      transcript:
        status === 'succeeded' && userTurn !== null
          ? [
              { role: 'user', content: userTurn },
              { role: 'assistant', content: reply as string },
            ]
          : [],
      summary: {
        id: `evt_${uuidv7(finishedAt)}`,
        sessionKey: run.mainSessionKey,
        text: summaryText(run, status, reply, error),
        source: `run:${run.id}`,
        wakeMode: run.wakeMode,
        ts: finishedAt,
        traceParent,
      },
      delivery,
      traceParent,
    };
    const used = usage?.result();
    if (used) completion.usage = used;
    const spend = this.deps.budgets?.countersFor(runScopes(run), finishedAt);
    if (spend && spend.length > 0) completion.spend = spend;
    const alert = status === 'succeeded' ? undefined : this.deps.alerts?.forRun(run, status, error);
    if (alert) completion.alert = alert;
    const { recorded, next, alert: alerted } = await this.commitCompletion(completion);
    if (!recorded) {
      log.warn({ runId: run.id }, 'run finished after its lease was lost; result discarded');
      return next;
    }
    const seconds = (finishedAt - run.startedAt) / 1000;
    this.deps.metrics?.runFinished(status, seconds);
    log.info({ runId: run.id, status, seconds, delivery: delivery.status }, 'run finished');
    this.deps.onRunFinished?.(run.id);
    if (run.stream) this.deps.deltas?.finished(run.id);
    if (alert) this.deps.alerts?.recorded(alert, alerted);
    return next;
  }

  /**
   * Records a finished run, the freed slot filled in the same transaction unless
   * the worker is stopping. A store that refuses it is asked again
   * (COMPLETION_RETRY_DELAYS_MS): the result exists only in memory, and dropping
   * it would leave the run leased until its lease ran out — holding back its
   * session key's next runs that long — and then call the model a second time.
   */
  private async commitCompletion(
    completion: RunCompletion,
  ): Promise<{ recorded: boolean; next: ClaimedRun[] | undefined; alert?: AlertOutcome }> {
    const { store, log } = this.deps;
    for (let retry = 0; ; retry++) {
      try {
        if (this.stopping) {
          // Nothing claimed (a limit of 0), but the outcome says what became of the alert.
          const outcome = await store.runs.completeAndClaim(completion, {
            now: this.clock.now(),
            leaseMs: this.leaseMs,
            limit: 0,
          });
          return { ...outcome, next: undefined };
        }
        const hold = this.claimHoldNow();
        return await store.runs.completeAndClaim(completion, {
          now: this.clock.now(),
          leaseMs: this.leaseMs,
          limit: 1,
          caps: this.deps.runCaps,
          ...(hold ? { hold } : {}),
        });
      } catch (error) {
        const delay = COMPLETION_RETRY_DELAYS_MS[retry];
        if (!(error instanceof StoreUnavailableError) || delay === undefined) throw error;
        log.warn(
          { err: error, runId: completion.runId, retryInMs: delay },
          'recording the run failed; retrying',
        );
        await new Promise<void>((resolve) => this.clock.setTimeout(resolve, delay));
      }
    }
  }

  private async handBack(runs: readonly ClaimedRun[]): Promise<void> {
    for (const run of runs) {
      await this.deps.store.runs
        .releaseRun(run.id, this.deps.owner)
        .catch((error) => this.deps.log.warn({ err: error, runId: run.id }, 'handing a run back failed'));
    }
  }

  private renewLeases(): void {
    const ids = [...this.active.keys()];
    this.deps.store.runs.renewLeases(this.deps.owner, ids, this.clock.now() + this.leaseMs).catch((error) => {
      this.deps.log.warn({ err: error }, 'renewing run leases failed');
    });
  }

  /** Stops claiming; lets running turns finish for up to `graceMs`, then aborts and re-queues them. */
  async stop(graceMs: number): Promise<void> {
    this.stopRenewals();
    this.stopFreed();
    await stopWithGrace(this.loop, this.active, graceMs, new Shutdown());
  }
}

/** A run held back by rate limits longer than its timeout: its error, starting `rate_limited`. */
function rateLimitedError(run: ClaimedRun, limited: RunRateLimited, now: number): string {
  const heldSeconds = Math.round((run.heldMs + Math.max(0, limited.until - now)) / 1000);
  return (
    `rate_limited: provider "${limited.provider}" answered 429 (${limited.message}); waiting for it would ` +
    `hold the run back ${heldSeconds} s in all, more than its timeout of ${run.timeoutSeconds} s`
  );
}

function initialDelivery(run: ClaimedRun, status: string, reply: string | null): DeliveryRecord {
  if (!run.deliver) return { status: 'none', channel: null, to: null, reason: null };
  const skipped = (reason: string): DeliveryRecord => ({
    status: 'skipped',
    channel: run.channel,
    to: run.to,
    reason,
  });
  if (status !== 'succeeded') return skipped(`the run ${status === 'timed_out' ? 'timed out' : 'failed'}`);
  if (reply === null || reply.trim() === '') return skipped('the reply was empty');
  if (isHeartbeatAck(reply)) return skipped('the reply was only a heartbeat acknowledgement');
  return { status: 'pending', channel: run.channel, to: run.to, reason: null };
}

function summaryText(run: ClaimedRun, status: string, reply: string | null, error: string | null): string {
  const name = run.name ?? 'Hook';
  if (status === 'succeeded') {
    const text = (reply ?? '').trim();
    return `${name}: ${text.length > SUMMARY_MAX_CHARS ? `${text.slice(0, SUMMARY_MAX_CHARS)}…` : text}`;
  }
  return `${name}: run ${status === 'timed_out' ? 'timed out' : 'failed'}: ${error}`;
}
