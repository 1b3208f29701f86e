/**
 * One agent turn, as runs and heartbeats both make it: the agent's system
 * prompt (SYSTEM.md), the session's recent transcript, the new user turn, sent
 * to the model. A provider error that may pass (429, 408, 5xx, a network
 * failure) is retried with backoff a bounded number of times, within the
 * turn's own deadline; any other error fails the turn at once. An agent with
 * tools makes the turn a loop of model and tool calls (tool-loop.ts), each model
 * call retried so.
 */
import type { ResolvedAgent } from '../config/resolved.js';
import type { WorkSpan } from '../observability/work-span.js';
import type { Store } from '../store/types.js';
import type { RunToolSet, ToolSpec } from '../tools/types.js';
import { fitHistory, HISTORY_TURNS } from './history.js';
import { tracedModelCall } from './model-span.js';
import type { ModelRouter, ResolvedModel } from './models.js';
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
  /** The run's or heartbeat's span, when tracing is on: each model call is a child of it (model-span.ts). */
  span?: WorkSpan;
  /** Counts a tool loop's calls (docs/operating.md, "Metrics"). */
  toolMetrics?: ToolCallMetrics;
  /** Sums every model call's usage (docs/usage.md), whatever the turn's outcome. */
  usage?: UsageMeter;
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
  /** `<provider>/<model>`, alias-resolved; null means the agent's default. */
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
   * failed after handing out a piece is not retried: the pieces already sent cannot be
   * taken back, so the deltas joined stay the reply (or the run fails).
   */
  onDelta?: (text: string) => void;
  /** The run's tools; absent: one model call, no tools offered. */
  tools?: TurnTools;
}

/** Makes the turn and returns the model's reply text. */
export async function runTurn(deps: TurnDeps, request: TurnRequest): Promise<string> {
  const { store, models } = deps;
  const resolved = resolveModel(models, request);
  deps.usage?.using(resolved);
  const system = await readWorkspaceFile(request.agent.workspace, SYSTEM_PROMPT_FILE);
  const history = fitHistory(await store.sessions.loadTranscript(request.sessionKey, HISTORY_TURNS));
  const messages: ConversationMessage[] = [...history, userMessage(request)];
  const base = { model: resolved.model, system, thinking: request.thinking ?? null, signal: request.signal };
  const call = (messages: ConversationMessage[], tools?: readonly ToolSpec[]) =>
    completeWithRetry(deps, resolved, {
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

function resolveModel(models: ModelRouter, request: TurnRequest): ResolvedModel {
  return models.resolve(request.model ?? models.defaultFor(request.agent.id));
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
  const { provider } = resolved;
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
      const complete = () => provider.complete(completion);
      const result = await (deps.span ? tracedModelCall(deps.span, resolved, call, complete) : complete());
      if (result.usage) deps.usage?.called(result.usage);
      return result;
    } catch (error) {
      if (completion.signal.aborted || !(error instanceof ProviderError) || !error.transient) throw error;
      if (streamedPieces) throw error;
      if (call >= retry.maxCalls) throw error;
      const delay = retryDelay(retry, call, error.retryAfterMs, random);
      deps.onRetry?.(error, delay, call);
      await sleep(delay, completion.signal);
    }
  }
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
