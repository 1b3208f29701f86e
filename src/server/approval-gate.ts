/**
 * The loop's `approve` hook (docs/operating.md, "Approving tool calls"): what a run's loop asks
 * before it makes a call matching the agent's `tools.approval`.
 *
 * - A decision already taken on that step (the run was queued again by it) answers at once:
 *   `approve` (make the call) or `deny` (give the model "denied by the operator" as a `denied`
 *   tool step).
 * - Otherwise the run waits: in one transaction under the run's lease its status becomes
 *   `waiting`, its lease is released and the approval request (run id, hook, tool, arguments)
 *   is enqueued for the alert route when alerts are on. The answer is `wait`: the loop ends
 *   the attempt there without completing the run (no completion, no release), and frees its
 *   slot. `lost` when the lease was already lost: the loop stops the same way, writing nothing.
 *
 * The step is the index the call's tool step will have: every earlier step is committed
 * before the call, so a resumed loop asks about the same index and finds the decision.
 */
import type { Alerts, FailedRun } from '../alerts/alerts.js';
import type { RunStepsStore, WaitingFor } from '../store/types.js';

export type ApprovalAnswer = 'approve' | 'deny' | 'wait' | 'lost';

export interface ApprovalGateDeps {
  store: { steps: Pick<RunStepsStore, 'decision' | 'wait'> };
  alerts: Pick<Alerts, 'forApproval' | 'recorded'>;
  now?: () => number;
}

export class ApprovalGate {
  private readonly now: () => number;

  constructor(private readonly deps: ApprovalGateDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Asked by the loop of `run` (leased to `owner`) before the call `call`. */
  async approve(run: FailedRun, owner: string, call: WaitingFor): Promise<ApprovalAnswer> {
    const { steps } = this.deps.store;
    const decided = await steps.decision(run.id, call.step);
    if (decided) return decided;
    const alert = this.deps.alerts.forApproval(run, call.tool, call.arguments);
    const outcome = await steps.wait(run.id, owner, call, this.now(), alert);
    if (!outcome.waiting) return 'lost';
    if (alert) this.deps.alerts.recorded(alert, outcome.alert);
    return 'wait';
  }
}
