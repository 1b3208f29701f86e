/**
 * The store's steps part (docs/tools.md, "Durable steps"): each finished model call and tool
 * call of a run's loop, committed before the loop goes on, so a resumed run repeats none.
 */
import type { ToolCallStatus } from '../../tools/types.js';

/** A tool call the model asked for in a model step. */
export interface StepToolCall {
  /** The provider's id for the call (`tool_calls[].id`, `tool_use.id`). */
  callId: string;
  /** `<server>.<tool>` */
  tool: string;
  arguments: Record<string, unknown>;
}

export interface ModelStep {
  kind: 'model';
  /** 0-based, in the run's order; model and tool steps share the numbering. */
  index: number;
  /** The model's text in this call (may be empty when it only called tools). */
  text: string;
  /** The calls it asked for; none means this was the final answer. */
  calls: StepToolCall[];
  status: 'ok';
  startedAt: number;
  finishedAt: number;
}

export interface ToolStep {
  kind: 'tool';
  index: number;
  callId: string;
  tool: string;
  arguments: Record<string, unknown>;
  /** What the model was given (already cut to the documented size). */
  result: string;
  status: ToolCallStatus;
  startedAt: number;
  finishedAt: number;
}

export type RunStep = ModelStep | ToolStep;

export interface StepsStore {
  /** The run's committed steps, in index order (empty for none). */
  list(runId: string): Promise<RunStep[]>;
  /**
   * Commits one finished step, while `owner` holds the run's lease; false when the lease is
   * lost (nothing written: another worker owns the run now). A step whose index is already
   * committed is not written again.
   */
  append(runId: string, owner: string, step: RunStep): Promise<boolean>;
}
