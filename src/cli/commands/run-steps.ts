/**
 * `agentgate runs steps|approve|deny` over the admin API (docs/operating.md, "A run's steps"
 * and "Approving tool calls"): what a run's loop did, and the operator's decision on the tool
 * call a `waiting` run waits for. Arguments and results come from the model and the tool
 * servers: they are printed as one-line text with control characters made visible.
 */
import { GatewayClient } from '../admin-client.js';
import { CliError } from '../cli-error.js';
import { between, oneLine, printJson, table } from '../format.js';
import { resolveTarget, type TargetOptions } from '../gateway-target.js';
import type { CliIo } from '../io.js';
import { decideHint, type RunView, waitingLine } from './runs.js';

/** A step as `GET /api/runs/{id}/steps` shows it; fields optional, as in RunView. */
export interface StepView {
  index: number;
  kind: string;
  tool?: string;
  arguments?: Record<string, unknown>;
  result?: string;
  status: string;
  startedAt?: string;
  finishedAt?: string;
}

export type Decision = 'approve' | 'deny';

export async function runsStepsCommand(
  io: CliIo,
  runId: string,
  options: TargetOptions & { json?: boolean },
): Promise<void> {
  const client = GatewayClient.of(resolveTarget(options, io.env));
  const path = `/api/runs/${encodeURIComponent(runId)}`;
  if (options.json) return printJson(io, await client.expectOk({ path: `${path}/steps`, auth: 'admin' }));
  // The run too, for what it waits for: the steps list has only what was committed.
  const [answer, run] = await Promise.all([
    client.expectOk({ path: `${path}/steps`, auth: 'admin' }),
    client.expectOk({ path, auth: 'admin' }) as Promise<unknown> as Promise<RunView>,
  ]);
  const steps = Array.isArray(answer.steps) ? (answer.steps as StepView[]) : [];
  if (steps.length === 0) io.console.log(`run ${runId} has no steps`);
  else
    io.console.log(
      table(
        ['STEP', 'KIND', 'TOOL', 'STATUS', 'TOOK', 'ARGUMENTS', 'RESULT'],
        steps.map((step) => [
          String(step.index),
          step.kind,
          step.tool ?? '-',
          step.status,
          between(step.startedAt, step.finishedAt),
          step.arguments === undefined ? '-' : oneLine(JSON.stringify(step.arguments), 40),
          oneLine(step.result, 60),
        ]),
      ),
    );
  if (run.status === 'waiting' && run.waitingFor) {
    io.console.log(
      `waiting for ${waitingLine(run.waitingFor)} ${oneLine(JSON.stringify(run.waitingFor.arguments), 200)}`,
    );
    io.console.error(decideHint(runId));
  }
}

export const runsApproveCommand = (io: CliIo, runId: string, options: TargetOptions & { json?: boolean }) =>
  decide(io, runId, 'approve', options);

export const runsDenyCommand = (io: CliIo, runId: string, options: TargetOptions & { json?: boolean }) =>
  decide(io, runId, 'deny', options);

/**
 * `POST /api/runs/{id}/approval`. One decision applies (docs/operating.md, "Approving tool
 * calls"): a run that waits for nothing, or was decided already, is the gateway's
 * `not_waiting` sentence and exit 1, as every error answer.
 */
async function decide(
  io: CliIo,
  runId: string,
  decision: Decision,
  options: TargetOptions & { json?: boolean },
): Promise<void> {
  const client = GatewayClient.of(resolveTarget(options, io.env));
  const answer = await client.expectOk({
    method: 'POST',
    path: `/api/runs/${encodeURIComponent(runId)}/approval`,
    auth: 'admin',
    json: { decision },
  });
  if (options.json) return printJson(io, answer);
  if (answer.ok !== true) throw new CliError('the gateway answered without ok');
  io.console.log(
    decision === 'approve'
      ? `run ${runId}: the tool call is approved; the run is queued again and makes it`
      : `run ${runId}: the tool call is denied; the run is queued again and the model is told`,
  );
  io.console.error(`follow it: agentgate runs steps ${runId}`);
}
