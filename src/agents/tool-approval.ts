/**
 * How the tool loop asks for an operator's decision on a call of a tool matching the
 * agent's `tools.approval` (docs/agent-runs.md, "Tools"). The loop does not call such a
 * tool on its own: it hands the call to an `ApproveTool` hook and does what it answers.
 *
 * The hook may answer at once (a decision already recorded for this step, say on a run
 * resumed after the operator decided), wait for one, or throw to stop this attempt (for
 * example to park the run as waiting; the loop commits nothing for the call, so the
 * resumed run asks again for the same step). A denial is given to the model as "denied by
 * the operator", with status `denied`. Without a hook, approval is not available: the call
 * is not made and the model is told so, as an error.
 */
import type { ToolStep } from '../store/contract/steps.js';

export type ApprovalDecision = 'approve' | 'deny';

/** The call waiting for a decision: the tool step it will be committed as. */
export interface ApprovalRequest {
  /** The index its tool step will have (docs/agent-runs.md, "Tools"). */
  step: ToolStep['index'];
  callId: string;
  /** `<server>.<tool>` */
  tool: string;
  arguments: Record<string, unknown>;
  /** The run's signal: its timeout or the gateway's stop. A hook that waits gives up with it. */
  signal: AbortSignal;
}

export type ApproveTool = (request: ApprovalRequest) => Promise<ApprovalDecision>;

export const DENIED_BY_OPERATOR = 'denied by the operator';
export const APPROVAL_NOT_AVAILABLE =
  "the call was not made: this tool needs an operator's approval, and approval is not available";

/**
 * Thrown by an `ApproveTool` hook to end this attempt of the run without recording it: the
 * run now waits for an operator (its lease already given up in the same transaction), or its
 * lease was lost. The worker frees the slot and writes nothing; the run comes back queued
 * once the call is decided.
 */
export class RunParked extends Error {
  constructor(readonly why: 'waiting' | 'lease_lost') {
    super(why === 'waiting' ? 'the run waits for an approval' : 'the run lost its lease');
  }
}
