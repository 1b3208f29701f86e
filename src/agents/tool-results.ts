/**
 * What a tool call's result becomes for the model (docs/agent-runs.md, "Tools";
 * docs/untrusted-content.md, "Tool results"): cut to `TOOL_RESULT_MAX_CHARS` with a note
 * saying so, and — being external data, whatever the tool — given inside the safety
 * boundary, its markers neutralised so a result cannot close the boundary early. A step
 * commits the cut text; the boundary is put around it each time the conversation is built.
 */
import type { ToolStep } from '../store/contract/steps.js';
import type { ToolResultMessage } from './providers/types.js';
import { wrapUntrusted } from './safety.js';

/** The most of one tool result the model is given, in characters. */
export const TOOL_RESULT_MAX_CHARS = 16_000;

/** `text`, or its first `max` characters and a note that the rest was cut. */
export function cutResult(text: string, max = TOOL_RESULT_MAX_CHARS): string {
  if (text.length <= max) return text;
  // Never half a surrogate pair.
  const end = isHighSurrogate(text.charCodeAt(max - 1)) ? max - 1 : max;
  return `${text.slice(0, end)}\n[result cut: it was ${text.length} characters; only the first ${end} are given]`;
}

/** A committed tool step as the model is given it. */
export function resultMessage(
  step: Pick<ToolStep, 'callId' | 'tool' | 'result' | 'status'>,
): ToolResultMessage {
  return {
    role: 'tool',
    callId: step.callId,
    text: wrapUntrusted(step.result, { source: `tool:${step.tool}`, kind: 'tool-result' }),
    isError: step.status !== 'ok',
  };
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
