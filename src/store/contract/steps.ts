/**
 * The store's steps part (docs/tools.md, "Durable steps"): each finished model call and tool
 * call of a run's loop, committed before the loop goes on, so a resumed run repeats none.
 */
import type { ToolCallStatus } from '../../tools/types.js';
import type { AlertOutcome, NewAlert } from './alerts.js';
import type { TokenUsage } from './usage.js';

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
  /**
   * The call's usage (docs/usage.md), kept with the step so a resumed run still counts the
   * calls an earlier attempt made; absent when the provider reported none.
   */
  usage?: TokenUsage;
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

/** The tool call a waiting run waits on (docs/operating.md, "Approving tool calls"). */
export interface WaitingFor {
  /** The index the call's tool step will have. */
  step: number;
  tool: string;
  arguments: Record<string, unknown>;
}

export type ApprovalDecision = 'approve' | 'deny';

export interface WaitOutcome {
  /** False when the lease was lost: nothing was written. */
  waiting: boolean;
  /** What became of the approval request's alert, when there was one and the run waits. */
  alert?: AlertOutcome;
}

/** Why an operator's decision was not taken: the run waits for nothing (unknown, or already decided). */
export type DecideResult = 'ok' | 'not_waiting';

/**
 * The steps part as the store has it: the loop's steps, and the runs that wait for an
 * operator's decision on a tool call (docs/operating.md, "Approving tool calls").
 */
export interface RunStepsStore extends StepsStore {
  /**
   * The run waits for a decision on `waitingFor`, while `owner` holds its lease: its status
   * becomes `waiting`, its lease is released (it holds no worker slot and is not claimable
   * until decided; it stays its session key's head, so later runs of the key wait behind
   * it), and `alert` (the approval request, when alerts are configured) is enqueued in the
   * same transaction. `waiting` false when the lease is lost (nothing written).
   */
  wait(
    runId: string,
    owner: string,
    waitingFor: WaitingFor,
    at: number,
    alert?: NewAlert,
  ): Promise<WaitOutcome>;
  /**
   * Takes an operator's decision on the call a run waits for, once across replicas: the
   * decision is kept with the waiting step and the run is queued again. `not_waiting` when
   * the run waits for nothing.
   */
  decide(runId: string, decision: ApprovalDecision, at: number): Promise<DecideResult>;
  /** The decision taken on the call of step `step` of a run; undefined when none was. */
  decision(runId: string, step: number): Promise<ApprovalDecision | undefined>;
  /**
   * Denies the calls of runs waiting since before `olderThan` (`tools.approvalTimeout`),
   * as an operator's deny would; answers the runs queued again.
   */
  expireWaits(olderThan: number, at: number): Promise<string[]>;
}
