/**
 * A run's steps as both drivers store them (docs/operating.md, "A run's steps"), written once:
 * the same `run_steps` and `run_approvals` columns on SQLite and PostgreSQL, a step's values
 * in that order, and a row read back as the step the loop committed. The JSON parts
 * (arguments, the calls a model step asked for) are kept as the text written here, on both
 * drivers, so a step reads back exactly as it was appended.
 */
import type { ApprovalDecision, RunStep, StepToolCall, WaitingFor } from '../types.js';
import { STEP_USAGE_COLUMNS, stepUsageOf, stepUsageValues, type UsageColumns } from './usage.js';

/** `run_steps`' columns, in the order `stepValues` gives them. */
export const STEP_COLUMNS = `run_id, step_index, kind, status, tool, call_id, arguments, result, text, calls, started_at, finished_at,
  ${STEP_USAGE_COLUMNS}`;

export const STEP_WIDTH = STEP_COLUMNS.split(',').length;

export interface StepRow extends UsageColumns {
  step_index: number;
  kind: 'model' | 'tool';
  status: RunStep['status'];
  tool: string | null;
  call_id: string | null;
  arguments: string | null;
  result: string | null;
  text: string | null;
  calls: string | null;
  started_at: number;
  finished_at: number;
}

/** One step's values, `STEP_COLUMNS` in order. */
export function stepValues(runId: string, step: RunStep): unknown[] {
  const isTool = step.kind === 'tool';
  return [
    runId,
    step.index,
    step.kind,
    step.status,
    isTool ? step.tool : null,
    isTool ? step.callId : null,
    isTool ? JSON.stringify(step.arguments ?? {}) : null,
    isTool ? step.result : null,
    isTool ? null : step.text,
    isTool ? null : JSON.stringify(step.calls),
    step.startedAt,
    step.finishedAt,
    // A model step keeps its call's usage (docs/usage.md); a tool step has none.
    ...stepUsageValues(isTool ? undefined : step.usage),
  ];
}

/** A `run_steps` row as the step the loop appended. */
export function toRunStep(row: StepRow): RunStep {
  const times = { index: row.step_index, startedAt: row.started_at, finishedAt: row.finished_at };
  if (row.kind === 'model') {
    const calls = JSON.parse(row.calls ?? '[]') as StepToolCall[];
    return { kind: 'model', ...times, text: row.text ?? '', calls, status: 'ok', ...stepUsageOf(row) };
  }
  return {
    kind: 'tool',
    ...times,
    callId: row.call_id ?? '',
    tool: row.tool ?? '',
    arguments: JSON.parse(row.arguments ?? '{}') as Record<string, unknown>,
    result: row.result ?? '',
    status: row.status,
  };
}

/** `runs.waiting_for`: the call a waiting run waits on, as JSON; null when it waits for nothing. */
export const waitingForColumn = (waitingFor: WaitingFor): string =>
  JSON.stringify({ step: waitingFor.step, tool: waitingFor.tool, arguments: waitingFor.arguments });

export function waitingForOf(column: string | null | undefined): WaitingFor | null {
  return column ? (JSON.parse(column) as WaitingFor) : null;
}

/** A decision as `run_approvals.decision` holds it; anything else reads as none. */
export function decisionOf(column: string | null | undefined): ApprovalDecision | undefined {
  return column === 'approve' || column === 'deny' ? column : undefined;
}
