/**
 * The turn of an agent with tools (docs/agent-runs.md, "Tools"): call the model with the
 * run's tools; while it asks for tool calls, commit its step, make each call, commit each
 * result, and call it again with the results; its first reply without calls is the turn's
 * reply. At most `maxSteps` model calls: a model still calling tools after that fails the
 * run. The run's signal (its `timeoutSeconds`, the gateway's stop) bounds all of it.
 *
 * Durable: a resumed run rebuilds the conversation from its committed steps, and makes
 * only the calls of its last model step that have no committed result yet.
 */

import type { WorkSpan } from '../observability/work-span.js';
import type { ModelStep, RunStep, StepToolCall, ToolStep } from '../store/contract/steps.js';
import type { RunToolSet, ToolCallStatus, ToolOutcome, ToolSpec } from '../tools/types.js';
import { throwIfAborted } from './providers/kit/abort.js';
import type { CompletionResult, ConversationMessage, ModelToolCall } from './providers/types.js';
import type { StepLog } from './step-log.js';
import { APPROVAL_NOT_AVAILABLE, type ApproveTool, DENIED_BY_OPERATOR } from './tool-approval.js';
import { cutResult, resultMessage } from './tool-results.js';
import { tracedToolCall } from './tool-span.js';

/** The `tool` label of a call of a tool the run does not offer (the model made the name up). */
export const UNKNOWN_TOOL_LABEL = 'unknown';

/** Counts finished tool calls (docs/operating.md, "Metrics"). */
export interface ToolCallMetrics {
  toolCallFinished(tool: string, status: ToolCallStatus): void;
}

/** The run failed: the model was still calling tools when its model calls ran out. */
export class MaxStepsReached extends Error {
  constructor(readonly maxSteps: number) {
    super(
      `the model was still calling tools after ${maxSteps} model calls (the agent's tools.maxSteps); ` +
        'the run stops here',
    );
    this.name = 'MaxStepsReached';
  }
}

export interface ToolLoopDeps {
  tools: RunToolSet;
  steps: StepLog;
  /** Decides calls of tools that need approval (tool-approval.ts); absent: approval is not available. */
  approve?: ApproveTool;
  /** The run's span: each call is a child of it (tool-span.ts). */
  span?: WorkSpan;
  metrics?: ToolCallMetrics;
  now?: () => number;
}

export interface ToolLoopRequest {
  /** The conversation before the loop: the session's history and the new user turn. */
  messages: readonly ConversationMessage[];
  signal: AbortSignal;
  /** One model call over the conversation so far, with the tools offered (transient errors retried inside). */
  callModel(messages: ConversationMessage[], tools: readonly ToolSpec[]): Promise<CompletionResult>;
}

/** Runs the loop and returns the model's final text. */
export async function runToolLoop(deps: ToolLoopDeps, request: ToolLoopRequest): Promise<string> {
  const now = deps.now ?? Date.now;
  const { tools, steps } = deps;
  const conversation = [...request.messages];
  const resumed = replay(steps.steps, conversation);
  if (resumed.final !== undefined) return resumed.final;
  let { nextIndex, modelCalls, pending } = resumed;
  for (;;) {
    if (pending.length > 0 && modelCalls >= tools.maxSteps) throw new MaxStepsReached(tools.maxSteps);
    for (const call of pending) {
      throwIfAborted(request.signal);
      const step = await makeCall(deps, call, nextIndex++, request.signal, now);
      await steps.append(step);
      deps.metrics?.toolCallFinished(metricLabel(tools, step.tool), step.status);
      conversation.push(resultMessage(step));
    }
    throwIfAborted(request.signal);
    const startedAt = now();
    const reply = await request.callModel(conversation, tools.tools);
    modelCalls++;
    const calls = reply.calls ?? [];
    const step: ModelStep = {
      kind: 'model',
      index: nextIndex++,
      text: reply.text,
      calls: calls.map(stepCall),
      status: 'ok',
      startedAt,
      finishedAt: now(),
      // Kept with the step, so a resumed run still counts this call (docs/usage.md).
      ...(reply.usage ? { usage: reply.usage } : {}),
    };
    await steps.append(step);
    if (calls.length === 0) return reply.text;
    conversation.push({
      role: 'assistant',
      content: reply.text,
      toolCalls: calls,
      ...(reply.providerBlocks?.length ? { providerBlocks: reply.providerBlocks } : {}),
    });
    pending = calls;
  }
}

interface Replayed {
  nextIndex: number;
  modelCalls: number;
  /** The last model step's calls that have no committed result. */
  pending: ModelToolCall[];
  /** The final text, when the last committed step is a model step without calls. */
  final?: string;
}

/** Adds the committed steps to the conversation, as the model saw them. */
function replay(committed: readonly RunStep[], conversation: ConversationMessage[]): Replayed {
  const state: Replayed = { nextIndex: 0, modelCalls: 0, pending: [] };
  for (const step of committed) {
    state.nextIndex = Math.max(state.nextIndex, step.index + 1);
    if (step.kind === 'tool') {
      conversation.push(resultMessage(step));
      state.pending = state.pending.filter((call) => call.id !== step.callId);
      continue;
    }
    state.modelCalls++;
    const calls = step.calls.map(modelCall);
    if (calls.length === 0) {
      state.final = step.text;
      continue;
    }
    delete state.final;
    conversation.push({ role: 'assistant', content: step.text, toolCalls: calls });
    state.pending = calls;
  }
  return state;
}

/** One call the model asked for, made (or refused) and ready to commit. */
async function makeCall(
  deps: ToolLoopDeps,
  call: ModelToolCall,
  index: number,
  signal: AbortSignal,
  now: () => number,
): Promise<ToolStep> {
  const startedAt = now();
  const label = metricLabel(deps.tools, call.name);
  const outcome = await tracedToolCall(deps.span, label, call.id, () => outcomeOf(deps, call, index, signal));
  return {
    kind: 'tool',
    index,
    callId: call.id,
    tool: call.name,
    arguments: call.arguments,
    result: cutResult(outcome.text),
    status: outcome.status,
    startedAt,
    finishedAt: now(),
  };
}

async function outcomeOf(
  deps: ToolLoopDeps,
  call: ModelToolCall,
  index: number,
  signal: AbortSignal,
): Promise<ToolOutcome> {
  const { tools } = deps;
  if (!offers(tools, call.name)) {
    return { status: 'error', text: `the call was not made: no tool named "${call.name}" is offered` };
  }
  if (call.invalidArguments !== undefined) {
    return { status: 'error', text: `the call was not made: ${call.invalidArguments}` };
  }
  if (tools.needsApproval(call.name)) {
    if (!deps.approve) return { status: 'error', text: APPROVAL_NOT_AVAILABLE };
    const decision = await deps.approve({
      step: index,
      callId: call.id,
      tool: call.name,
      arguments: call.arguments,
      signal,
    });
    throwIfAborted(signal);
    if (decision !== 'approve') return { status: 'denied', text: DENIED_BY_OPERATOR };
  }
  return tools.call(call.name, call.arguments, signal);
}

function offers(tools: RunToolSet, name: string): boolean {
  return tools.tools.some((tool) => tool.name === name);
}

/** A tool's name as a label: a made-up one is `unknown`, so a model cannot grow the series. */
function metricLabel(tools: RunToolSet, name: string): string {
  return offers(tools, name) ? name : UNKNOWN_TOOL_LABEL;
}

function stepCall(call: ModelToolCall): StepToolCall {
  return { callId: call.id, tool: call.name, arguments: call.arguments };
}

function modelCall(call: StepToolCall): ModelToolCall {
  return { id: call.callId, name: call.tool, arguments: call.arguments };
}
