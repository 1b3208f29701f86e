/**
 * One agent turn, as runs and heartbeats both make it: the agent's system
 * prompt (SYSTEM.md), the session's recent transcript, the new user turn, sent
 * to the model. A provider error that may pass (429, 408, 5xx, a network
 * failure) is retried with backoff a bounded number of times, within the
 * turn's own deadline; any other error fails the turn at once. A call whose
 * retries ran out goes to the next model of the agent's chain, if it has one
 * (docs/agent-runs.md, "Fallbacks"), and the turn's later calls stay there. An
 * agent with tools makes the turn a loop of model and tool calls (tool-loop.ts),
 * each model call retried and fallen back so.
 */
import type { ResolvedAgent } from '../config/resolved.js';
import type { WorkSpan } from '../observability/work-span.js';
import type { Store } from '../store/types.js';
import type { RunToolSet, ToolSpec } from '../tools/types.js';
import { fitHistory, HISTORY_TURNS } from './history.js';
import { tracedModelCall } from './model-span.js';
import type { ModelRouter, ResolvedModel } from './models.js';
import { providerOf } from './provider-hold.js';
import { type ModelCallGate, RunRateLimited } from './provider-limits.js';
import { abortReason } from './providers/kit/abort.js';
import {
  type ChatMessage,
  type CompletionRequest,
  type CompletionResult,
  type ConversationMessage,
  type ModelAttachment,
  ProviderError,
  type ThinkingLevel,
} from './providers/types.js';
import type { StepLog } from './step-log.js';
import type { ApproveTool } from './tool-approval.js';
import { runToolLoop, type ToolCallMetrics } from './tool-loop.js';
import type { UsageMeter } from './usage-meter.js';
import { readWorkspaceFile, SYSTEM_PROMPT_FILE } from './workspace.js';

export interface RetryPolicy {
  /** Provider calls per turn, the first included. */
  maxCalls: number;
  /** Delay before the first retry; doubles each time, with jitter. */
  baseDelayMs: number;
  /** Longest single wait, a provider's Retry-After included. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxCalls: 4, baseDelayMs: 1000, maxDelayMs: 30_000 };

export interface TurnDeps {
  store: Store;
  models: ModelRouter;
  retry?: RetryPolicy;
  /** Waits `ms`, or rejects with the signal's reason when it aborts first. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  random?: () => number;
  /** Told about each retry, for the log. */
  onRetry?: (error: ProviderError, delayMs: number, call: number) => void;
  /** Told about each fallback, for the log: a call to `from` failed after its retries and goes to `to`. */
  onFallback?: (error: ProviderError, from: string, to: string) => void;
  /** The run's or heartbeat's span, when tracing is on: each model call is a child of it (model-span.ts). */
  span?: WorkSpan;
  /** Counts a tool loop's calls (docs/operating.md, "Metrics"). */
  toolMetrics?: ToolCallMetrics;
  /** Sums every model call's usage (docs/usage.md), whatever the turn's outcome. */
  usage?: UsageMeter;
  /**
   * Provider limits (docs/agent-runs.md, "Provider limits"): each call waits for its provider's
   * slot, and a 429 that outlasts the retries ends the turn with RunRateLimited. Absent: calls
   * are made at once, and such a 429 fails the turn after its retries.
   */
  gate?: ModelCallGate;
}

/** A run's tools (docs/agent-runs.md, "Tools"): given, the turn is a loop of model and tool calls. */
export interface TurnTools {
  set: RunToolSet;
  /** The run's committed steps and where the next ones go (step-log.ts). */
  steps: StepLog;
  /** Decides calls that need approval (tool-approval.ts); absent: approval is not available. */
  approve?: ApproveTool;
}

export interface TurnRequest {
  agent: ResolvedAgent;
  /**
   * `<provider>/<model>`, alias-resolved; null means the agent's default. Null or the agent's
   * primary: the agent's chain is called (its fallbacks too); another model: only that one.
   */
  model: string | null;
  sessionKey: string;
  /** The new user turn, already wrapped when it is untrusted. */
  userTurn: string;
  /** Images and PDFs given with the new user turn (docs/attachments.md); absent or empty for none. */
  attachments?: ModelAttachment[];
  thinking?: ThinkingLevel | null;
  signal: AbortSignal;
  /**
   * A streamed run's reply pieces (docs/callers.md, "Streamed answers"). A call that
   * failed after handing out a piece is not retried, nor sent to a fallback: the pieces
   * already sent cannot be taken back, so the deltas joined stay the reply (or the run fails).
   */
  onDelta?: (text: string) => void;
  /** The run's tools; absent: one model call, no tools offered. */
  tools?: TurnTools;
}

/** Makes the turn and returns the model's reply text. */
export async function runTurn(deps: TurnDeps, request: TurnRequest): Promise<string> {
  const { store, models } = deps;
  const route: Route = { chain: resolveChain(models, request), at: 0, foreignBefore: 0 };
  deps.usage?.using(route.chain[0] as ResolvedModel);
  const system = await readWorkspaceFile(request.agent.workspace, SYSTEM_PROMPT_FILE);
  const history = fitHistory(await store.sessions.loadTranscript(request.sessionKey, HISTORY_TURNS));
  const messages: ConversationMessage[] = [...history, userMessage(request)];
  const base = { system, thinking: request.thinking ?? null, signal: request.signal };
  const call = (messages: ConversationMessage[], tools?: readonly ToolSpec[]) =>
    completeWithFallback(deps, route, {
      ...base,
      messages,
      sessionKey: request.sessionKey,
      ...(tools?.length ? { tools } : {}),
      ...(request.onDelta ? { onDelta: request.onDelta } : {}),
    });
  if (!request.tools) return (await call(messages)).text;
  const { set, steps, approve } = request.tools;
  // A resumed loop's earlier model calls count too: their usage was committed with their steps.
  for (const step of steps.steps) if (step.kind === 'model' && step.usage) deps.usage?.committed(step.usage);
  return runToolLoop(
    {
      tools: set,
      steps,
      ...(approve ? { approve } : {}),
      ...(deps.span ? { span: deps.span } : {}),
      ...(deps.toolMetrics ? { metrics: deps.toolMetrics } : {}),
    },
    { messages, signal: request.signal, callModel: call },
  );
}

/** The models a turn may call, in order (models.ts, `chainFor`); the first is its primary. */
function resolveChain(models: ModelRouter, request: TurnRequest): ResolvedModel[] {
  const chain = models.chainFor(request.agent.id, request.model);
  if (chain.length === 0) return [models.resolve(null)];
  return chain.map((ref) => models.resolve(ref));
}

/**
 * A turn's chain and the model it calls now. A fallback, once taken, stays for the turn's
 * later calls (a tool loop's next steps): one run talks to one model at a time, so its
 * conversation and its tool-calling format stay coherent (docs/agent-runs.md, "Fallbacks").
 */
interface Route {
  chain: ResolvedModel[];
  at: number;
  /**
   * How many messages of the conversation came before the last fallback: their
   * `providerBlocks` (Anthropic's signed thinking) belong to an earlier model and are not
   * sent to this one, which then does without, as for a resumed run.
   */
  foreignBefore: number;
}

/**
 * One model call, made to the route's model, then — when it failed in a way that may pass
 * and its retries ran out — to each next model of the chain. A streamed call that already
 * handed out a piece does not fall back: the pieces sent cannot be taken back.
 */
async function completeWithFallback(
  deps: TurnDeps,
  route: Route,
  request: Omit<CompletionRequest, 'model'>,
): Promise<CompletionResult> {
  let streamedPieces = false;
  const onDelta = request.onDelta;
  const sent: Omit<CompletionRequest, 'model'> = onDelta
    ? {
        ...request,
        onDelta: (text: string) => {
          streamedPieces = true;
          onDelta(text);
        },
      }
    : request;
  for (;;) {
    const resolved = route.chain[route.at] as ResolvedModel;
    deps.usage?.using(resolved);
    const messages = withoutForeignBlocks(sent.messages, route.foreignBefore);
    try {
      skipIfRateLimited(deps.gate, resolved);
      return await completeWithRetry(deps, resolved, { ...sent, messages, model: resolved.model });
    } catch (error) {
      const next = route.chain[route.at + 1];
      if (next === undefined || streamedPieces || !fallsBack(error, request.signal)) {
        throw streamedPieces ? error : rateLimitedOr(deps.gate, route, error, request.signal);
      }
      deps.onFallback?.(error as ProviderError, resolved.ref, next.ref);
      route.at++;
      route.foreignBefore = sent.messages.length;
    }
  }
}

/**
 * A model whose provider answered 429 here for longer than a turn's retries wait is not called
 * until then: the turn goes to its next model, or is put back in the queue (docs/agent-runs.md,
 * "Provider limits").
 */
function skipIfRateLimited(gate: ModelCallGate | undefined, resolved: ResolvedModel): void {
  const provider = providerOf(resolved.ref);
  const until = gate?.limitedUntil(provider);
  if (until === undefined) return;
  throw new ProviderError(
    `provider "${provider}" is rate limited (429) until ${new Date(until).toISOString()}`,
    429,
  );
}

/**
 * What ends a turn whose last model failed: with provider limits, a 429 becomes RunRateLimited,
 * until the earliest time one of the chain's providers takes calls again; any other error as is.
 */
function rateLimitedOr(gate: ModelCallGate | undefined, route: Route, error: unknown, signal: AbortSignal) {
  if (!gate || signal.aborted || !(error instanceof ProviderError) || error.status !== 429) return error;
  const times = route.chain.flatMap((model) => gate.limitedUntil(providerOf(model.ref)) ?? []);
  if (times.length === 0) return error;
  const provider = providerOf((route.chain[route.at] as ResolvedModel).ref);
  return new RunRateLimited(provider, Math.min(...times), error.message);
}

/** The conversation with the first `count` messages' provider blocks left out. */
function withoutForeignBlocks(messages: ConversationMessage[], count: number): ConversationMessage[] {
  if (count === 0) return messages;
  return messages.map((message, index) => {
    if (index >= count || message.role !== 'assistant' || !message.providerBlocks) return message;
    const { providerBlocks: _, ...rest } = message;
    return rest;
  });
}

/**
 * What goes to the next model: what a retry would have tried again (429, 408, 5xx — Anthropic's
 * 529 `overloaded_error` too —, a timeout, an unreachable provider). Not a 400/401/403/404, which
 * another model would not mend, nor the run's own deadline or the gateway's stop.
 */
function fallsBack(error: unknown, signal: AbortSignal): boolean {
  return !signal.aborted && error instanceof ProviderError && error.transient;
}

/**
 * One model call, a transient provider error retried with backoff. A streamed call that
 * already handed out a piece is not retried: the pieces sent cannot be taken back.
 */
async function completeWithRetry(
  deps: TurnDeps,
  resolved: ResolvedModel,
  request: CompletionRequest,
): Promise<CompletionResult> {
  let streamedPieces = false;
  const onDelta = request.onDelta;
  const completion: CompletionRequest = onDelta
    ? {
        ...request,
        onDelta: (text: string) => {
          streamedPieces = true;
          onDelta(text);
        },
      }
    : request;
  const retry = deps.retry ?? DEFAULT_RETRY;
  const sleep = deps.sleep ?? abortableSleep;
  const random = deps.random ?? Math.random;
  for (let call = 1; ; call++) {
    try {
      return await callThroughGate(deps, resolved, call, completion);
    } catch (error) {
      if (completion.signal.aborted || !(error instanceof ProviderError) || !error.transient) throw error;
      if (streamedPieces) throw error;
      const delay = retryDelay(retry, call, error.retryAfterMs, random);
      if (outlastsRetries(deps.gate, resolved, error, delay, call, retry)) throw error;
      if (call >= retry.maxCalls) throw error;
      deps.onRetry?.(error, delay, call);
      await sleep(delay, completion.signal);
    }
  }
}

/** One call, in its provider's slot when there are limits (the span times the call, not the wait). */
async function callThroughGate(
  deps: TurnDeps,
  resolved: ResolvedModel,
  call: number,
  completion: CompletionRequest,
): Promise<CompletionResult> {
  const release = await deps.gate?.acquire(providerOf(resolved.ref), completion.signal);
  try {
    const complete = () => resolved.provider.complete(completion);
    const result = await (deps.span ? tracedModelCall(deps.span, resolved, call, complete) : complete());
    if (result.usage) deps.usage?.called(result.usage, resolved);
    return result;
  } finally {
    release?.();
  }
}

/**
 * With provider limits, a 429 whose wait — the provider's Retry-After, else the next backoff —
 * is longer than a retry waits, or that came on the last call, is not waited for in the turn:
 * the provider is marked rate limited here until then (docs/agent-runs.md, "Provider limits").
 */
function outlastsRetries(
  gate: ModelCallGate | undefined,
  resolved: ResolvedModel,
  error: ProviderError,
  delay: number,
  call: number,
  retry: RetryPolicy,
): boolean {
  if (!gate || error.status !== 429) return false;
  const wait = error.retryAfterMs ?? delay;
  if (wait <= retry.maxDelayMs && call < retry.maxCalls) return false;
  gate.rateLimited(providerOf(resolved.ref), wait);
  return true;
}

function userMessage(request: TurnRequest): ChatMessage {
  const { userTurn: content, attachments } = request;
  return attachments?.length ? { role: 'user', content, attachments } : { role: 'user', content };
}

/** Exponential backoff with full jitter; a provider's Retry-After wins, within the cap. */
export function retryDelay(
  policy: RetryPolicy,
  call: number,
  retryAfterMs: number | undefined,
  random: () => number,
): number {
  if (retryAfterMs !== undefined) return Math.min(Math.max(0, retryAfterMs), policy.maxDelayMs);
  const ceiling = Math.min(policy.baseDelayMs * 2 ** (call - 1), policy.maxDelayMs);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(abortReason(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
