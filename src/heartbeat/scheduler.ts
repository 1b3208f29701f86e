/**
 * Heartbeats (docs/agent-runs.md): one agent turn in
 * a main session that sees every pending system event (and the workspace's
 * HEARTBEAT.md). Periodic per agent (`heartbeat.every`, "0" off), and on
 * demand — the store's `events` commits (a wake-now event, a wake-now run's
 * summary) and `request` — requests within 250 ms coalesce into one, and a session never runs
 * two at once — a request during a heartbeat runs one more right after. Events
 * are consumed only when the turn succeeds; a reply that is only an
 * acknowledgement is not delivered, any other goes to the session's last route.
 */

import { HEARTBEAT_MARKER, HEARTBEAT_OK, isHeartbeatAck } from '../agents/heartbeat-protocol.js';
import type { ModelRouter } from '../agents/models.js';
import { newOwnerId } from '../agents/owner.js';
import type { ModelCallGate } from '../agents/provider-limits.js';
import type { ProviderError } from '../agents/providers/types.js';
import { wrapUntrusted } from '../agents/safety.js';
import { type RetryPolicy, runTurn } from '../agents/turn.js';
import { meterFor, UsageMeter, type UsageMetrics } from '../agents/usage-meter.js';
import type { RunBudgets } from '../agents/worker.js';
import { HEARTBEAT_FILE, readWorkspaceFile } from '../agents/workspace.js';
import { heartbeatScopes } from '../budgets/scopes.js';
import type { ResolvedAgent, ResolvedConfig } from '../config/resolved.js';
import type { Logger } from '../log.js';
import { InFlight } from '../loops/in-flight.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import { type SpanStarter, traced, type WorkSpan } from '../observability/work-span.js';
import type { DeliveryRecord, PendingEvent, RunUsage, SpendCounter, Store } from '../store/types.js';
import { type Clock, systemClock } from '../util/clock.js';
import { parseDuration } from '../util/duration.js';
import { uuidv7 } from '../util/ids.js';

export const COALESCE_MS = 250;
const MAX_EVENTS = 200;
/** How long a heartbeat lease outlives the turn's timeout. */
const HEARTBEAT_LEASE_MARGIN_MS = 60_000;
/** A heartbeat shows events up to this much text; the rest stay pending for the next one. */
const MAX_EVENT_CHARS = 50_000;
/** Longest single event text quoted in a heartbeat prompt. */
const EVENT_TEXT_CHARS = 4000;

export interface HeartbeatDeps {
  store: Store;
  config: ResolvedConfig;
  models: ModelRouter;
  log: Logger;
  /** Retries of transient provider errors within a turn (defaults in turn.ts). */
  providerRetry?: RetryPolicy;
  /** Provider limits shared with the run worker (docs/agent-runs.md, "Provider limits"): heartbeats' calls count too. */
  limits?: ModelCallGate;
  /** Time for coalescing, periodic beats, turn timeouts and the stop grace (tests pass a manual one). */
  clock?: Clock;
  /** Counts finished heartbeats, and model calls' usage (docs/operating.md, "Metrics"). */
  metrics?: Pick<GatewayMetrics, 'heartbeatFinished'> & Partial<UsageMetrics>;
  /**
   * With tracing on, each heartbeat turn is a trace of its own, linked to the traces of
   * the events it sees (docs/tracing.md).
   */
  tracing?: SpanStarter;
  /** The budgets (docs/budgets.md); absent with none configured. */
  budgets?: RunBudgets;
}

interface SessionState {
  agent: ResolvedAgent;
  /** Cancels the pending coalesced request. */
  cancelTimer?: () => void;
  /** Asked for again while a heartbeat of the session was running: one more after it. */
  again: boolean;
  /** Cancels the request at the end of a spent budget's window (docs/budgets.md). */
  cancelBudgetWait?: () => void;
}

/** One heartbeat, as its turn and its record see it. */
interface Beat {
  id: string;
  sessionKey: string;
  startedAt: number;
  events: PendingEvent[];
  span: WorkSpan | undefined;
  /** Its model calls' usage (docs/usage.md), recorded with it whatever its outcome. */
  usage: UsageMeter;
  /** Its budgets' counters at a time (docs/budgets.md): none without budgets. */
  spend: (at: number) => SpendCounter[];
}

export class HeartbeatScheduler {
  private readonly sessions = new Map<string, SessionState>();
  private readonly periodic: (() => void)[] = [];
  private readonly clock: Clock;
  /** The heartbeats running now, by main session key. */
  private readonly beats: InFlight;
  /** This scheduler's name on heartbeat leases. */
  private readonly owner = newOwnerId();
  private stopped = false;
  private unwatch = () => {};

  constructor(private readonly deps: HeartbeatDeps) {
    this.clock = deps.clock ?? systemClock;
    this.beats = new InFlight(this.clock);
    for (const agent of deps.config.agents.list) {
      this.sessions.set(agent.mainSessionKey, { agent, again: false });
    }
  }

  /** Starts periodic heartbeats and runs the ones a previous process left owed. */
  async start(): Promise<void> {
    const defaults = this.deps.config.agents.defaults.heartbeat.every;
    for (const state of this.sessions.values()) {
      const every = parseDuration(state.agent.heartbeat?.every ?? defaults);
      if (every > 0) {
        this.periodic.push(this.clock.setInterval(() => this.request(state.agent.mainSessionKey), every));
      }
    }
    this.unwatch = this.deps.store.committed.on('events', (sessionKeys) => {
      if (sessionKeys) for (const sessionKey of sessionKeys) this.request(sessionKey);
      else
        this.requestAwaiting().catch((error) =>
          this.deps.log.warn({ err: error }, 'reading the sessions owed a heartbeat failed'),
        );
    });
    await this.requestAwaiting();
  }

  /** Requests the heartbeats that pending "now" events are owed. */
  private async requestAwaiting(): Promise<void> {
    for (const sessionKey of await this.deps.store.sessions.sessionsAwaitingHeartbeat())
      this.request(sessionKey);
  }

  /** Asks for a heartbeat of this main session soon; requests within 250 ms coalesce. */
  request(sessionKey: string): void {
    const state = this.sessions.get(sessionKey);
    if (!state || this.stopped) return;
    if (this.beats.has(sessionKey)) {
      state.again = true;
      return;
    }
    if (state.cancelTimer) return;
    state.cancelTimer = this.clock.setTimeout(() => {
      state.cancelTimer = undefined;
      this.run(state);
    }, COALESCE_MS);
  }

  private run(state: SessionState): void {
    state.again = false;
    const sessionKey = state.agent.mainSessionKey;
    const beat = (signal: AbortSignal) =>
      this.beat(state.agent, signal).catch((error) =>
        this.deps.log.error({ err: error, session: sessionKey }, 'heartbeat failed'),
      );
    void this.beats.track(sessionKey, beat).then(() => {
      if (state.again) this.request(sessionKey);
    });
  }

  private async beat(agent: ResolvedAgent, stopSignal: AbortSignal): Promise<void> {
    const { store } = this.deps;
    const sessionKey = agent.mainSessionKey;
    // Across replicas (PostgreSQL) only one may beat a session at a time. The lease
    // outlives the longest turn, so it needs no renewal and expires if this replica dies.
    const now = this.clock.now();
    const leaseUntil =
      now + this.deps.config.agents.defaults.timeoutSeconds * 1000 + HEARTBEAT_LEASE_MARGIN_MS;
    if (!(await store.sessions.acquireHeartbeatLease(sessionKey, this.owner, now, leaseUntil))) return;
    try {
      await this.beatHoldingLease(agent, stopSignal);
    } finally {
      await store.sessions.releaseHeartbeatLease(sessionKey, this.owner).catch(() => {});
    }
  }

  private async beatHoldingLease(agent: ResolvedAgent, stopSignal: AbortSignal): Promise<void> {
    const { store } = this.deps;
    const sessionKey = agent.mainSessionKey;
    const events = fitEvents(await store.sessions.pendingEvents(sessionKey, MAX_EVENTS));
    const standing = await readWorkspaceFile(agent.workspace, HEARTBEAT_FILE);
    if (events.length === 0 && standing === undefined) return; // nothing to look at
    if (await this.heldByBudget(agent)) return;

    const startedAt = this.clock.now();
    const id = `hb_${uuidv7(startedAt)}`;
    const span = () => ({
      kind: 'internal' as const,
      links: events.map((event) => event.traceParent),
      attributes: { 'agentgate.heartbeat_id': id, 'agentgate.event_count': events.length },
    });
    await traced(this.deps.tracing, 'agentgate.heartbeat', span, (beatSpan) =>
      this.turn(agent, stopSignal, id, startedAt, events, standing, beatSpan),
    );
  }

  /**
   * A heartbeat whose budget (`all`, its agent's, the `wake` hook's: docs/budgets.md) is spent
   * for its window waits for the window's end: no model call now, its events stay pending, and
   * it is asked for again then.
   */
  private async heldByBudget(agent: ResolvedAgent): Promise<boolean> {
    const now = this.clock.now();
    const until = await this.deps.budgets?.holdUntil(heartbeatScopes(agent.id), now);
    if (until === undefined) return false;
    const sessionKey = agent.mainSessionKey;
    this.deps.log.info(
      { session: sessionKey, until: new Date(until).toISOString() },
      'heartbeat waits: its budget is spent',
    );
    const state = this.sessions.get(sessionKey);
    if (state && !state.cancelBudgetWait) {
      state.cancelBudgetWait = this.clock.setTimeout(() => {
        state.cancelBudgetWait = undefined;
        this.request(sessionKey);
      }, until - now);
    }
    return true;
  }

  /** The heartbeat's turn and its record; inside its span when tracing is on. */
  private async turn(
    agent: ResolvedAgent,
    stopSignal: AbortSignal,
    id: string,
    startedAt: number,
    events: PendingEvent[],
    standing: string | undefined,
    span: WorkSpan | undefined,
  ): Promise<void> {
    const usage = new UsageMeter(meterFor(this.deps.metrics));
    const scopes = heartbeatScopes(agent.id);
    const spend = (at: number) => this.deps.budgets?.countersFor(scopes, at) ?? [];
    const beat: Beat = { id, sessionKey: agent.mainSessionKey, startedAt, events, span, usage, spend };
    const prompt = heartbeatPrompt(events, standing, new Date(startedAt));
    const timeoutSeconds = this.deps.config.agents.defaults.timeoutSeconds;
    const timeout = new AbortController();
    const cancelTimeout = this.clock.setTimeout(() => timeout.abort(), timeoutSeconds * 1000);
    const signal = AbortSignal.any([stopSignal, timeout.signal]);
    let reply: string;
    try {
      reply = await this.callModel(agent, beat, prompt, signal);
    } catch (error) {
      if (stopSignal.aborted) return; // stopping: the events stay pending for the next start
      const message = signal.aborted ? `timed out after ${timeoutSeconds} s` : (error as Error).message;
      await this.recordFailed(beat, message, signal.aborted);
      return;
    } finally {
      cancelTimeout();
    }
    await this.recordSucceeded(beat, prompt, reply);
  }

  private callModel(agent: ResolvedAgent, beat: Beat, prompt: string, signal: AbortSignal): Promise<string> {
    const { store, models, log } = this.deps;
    const { sessionKey } = beat;
    const onRetry = (failure: Error, delayMs: number, call: number) =>
      log.warn(
        { session: sessionKey, error: failure.message, delayMs, call },
        'provider call failed; retrying',
      );
    // The agent's chain applies to its heartbeat too (docs/agent-runs.md, "Fallbacks").
    const onFallback = (failure: ProviderError, from: string, to: string) =>
      log.warn(
        { session: sessionKey, from, to, status: failure.status, error: failure.message },
        'model call failed; falling back',
      );
    return runTurn(
      {
        store,
        models,
        retry: this.deps.providerRetry,
        onRetry,
        onFallback,
        span: beat.span,
        usage: beat.usage,
        ...(this.deps.limits ? { gate: this.deps.limits } : {}),
      },
      { agent, model: null, sessionKey, userTurn: prompt, signal },
    );
  }

  /** A failed turn: its events stay pending for the next heartbeat. */
  private async recordFailed(beat: Beat, message: string, timedOut: boolean): Promise<void> {
    const { id, sessionKey, events } = beat;
    this.deps.log.warn(
      { heartbeatId: id, session: sessionKey, error: message, ...eventFields(events) },
      'heartbeat turn failed; events stay pending',
    );
    beat.span?.fail(message, timedOut ? 'timeout' : 'failed');
    const finishedAt = this.clock.now();
    await this.deps.store.sessions.recordHeartbeat({
      id,
      sessionKey,
      startedAt: beat.startedAt,
      finishedAt,
      status: 'failed',
      eventIds: events.map((e) => e.id),
      reply: null,
      error: message,
      transcript: [],
      delivery: { status: 'skipped', channel: null, to: null, reason: 'the heartbeat failed' },
      ...usageOf(beat, finishedAt),
    });
    this.deps.metrics?.heartbeatFinished('failed');
  }

  /** A reply that is only an acknowledgement is not delivered; any other goes to the last route. */
  private async recordSucceeded(beat: Beat, prompt: string, reply: string): Promise<void> {
    const { id, sessionKey, events } = beat;
    const delivery: DeliveryRecord = isHeartbeatAck(reply)
      ? {
          status: 'skipped',
          channel: null,
          to: null,
          reason: 'the reply was only a heartbeat acknowledgement',
        }
      : { status: 'pending', channel: 'last', to: null, reason: null };
    const finishedAt = this.clock.now();
    await this.deps.store.sessions.recordHeartbeat({
      id,
      sessionKey,
      startedAt: beat.startedAt,
      finishedAt,
      status: 'succeeded',
      eventIds: events.map((e) => e.id),
      reply,
      error: null,
      transcript: [
        { role: 'user', content: prompt },
        { role: 'assistant', content: reply },
      ],
      delivery,
      traceParent: beat.span?.traceparent ?? null,
      ...usageOf(beat, finishedAt),
    });
    this.deps.metrics?.heartbeatFinished('succeeded');
    this.deps.log.info(
      { heartbeatId: id, session: sessionKey, delivery: delivery.status, ...eventFields(events) },
      'heartbeat finished',
    );
  }

  /** Stops scheduling; a heartbeat in flight gets `graceMs`, then is aborted (its events stay pending). */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    this.unwatch();
    for (const stopPeriodic of this.periodic) stopPeriodic();
    for (const state of this.sessions.values()) {
      state.cancelTimer?.();
      state.cancelTimer = undefined;
      state.cancelBudgetWait?.();
      state.cancelBudgetWait = undefined;
    }
    await this.beats.drain(graceMs);
  }
}

/** The `usage` of a heartbeat's record (present when its turn resolved a model), and its budgets' counters. */
function usageOf(beat: Beat, finishedAt: number): { usage?: RunUsage; spend?: SpendCounter[] } {
  const usage = beat.usage.result();
  const spend = beat.spend(finishedAt);
  return { ...(usage ? { usage } : {}), ...(spend.length > 0 ? { spend } : {}) };
}

/** The oldest pending events that fit one prompt; only these are consumed by the turn. */
function fitEvents(events: PendingEvent[]): PendingEvent[] {
  const shown: PendingEvent[] = [];
  let total = 0;
  for (const event of events) {
    const text =
      event.text.length > EVENT_TEXT_CHARS ? `${event.text.slice(0, EVENT_TEXT_CHARS)}…` : event.text;
    if (shown.length > 0 && total + text.length > MAX_EVENT_CHARS) break;
    total += text.length;
    shown.push({ ...event, text });
  }
  return shown;
}

/** The heartbeat turn's prompt: the marker, the time, standing instructions, the pending events (untrusted). */
export function heartbeatPrompt(events: PendingEvent[], standing: string | undefined, now: Date): string {
  const parts = [
    HEARTBEAT_MARKER,
    `It is ${now.toISOString()}. This is a heartbeat: look at what is pending and act on it.`,
  ];
  if (standing !== undefined) parts.push(`Standing instructions (${HEARTBEAT_FILE}):\n${standing.trim()}`);
  if (events.length === 0) {
    parts.push('Pending events: none.');
  } else {
    const list = events.map((e) => `- ${new Date(e.ts).toISOString()} [${e.source}] ${e.text}`).join('\n');
    parts.push(`Pending events, oldest first:\n${wrapUntrusted(list, { source: 'system-events' })}`);
  }
  parts.push(`If nothing needs attention, reply with exactly ${HEARTBEAT_OK}.`);
  return parts.join('\n\n');
}

/** Most event ids a heartbeat's log line names (the count is always there). */
const LOGGED_EVENT_IDS = 50;

/**
 * The events a heartbeat saw, for its log lines: a wake's `eventId` (its answer)
 * and a run's summary (source `run:<runId>`) lead here.
 */
function eventFields(events: readonly PendingEvent[]) {
  return {
    eventCount: events.length,
    eventIds: events.slice(0, LOGGED_EVENT_IDS).map((event) => event.id),
    runIds: events
      .filter((event) => event.source.startsWith('run:'))
      .slice(0, LOGGED_EVENT_IDS)
      .map((event) => event.source.slice(4)),
  };
}
