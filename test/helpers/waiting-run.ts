/**
 * A run that waits for an operator's decision on a tool call (docs/operating.md, "Approving
 * tool calls"), reached without a model: a real hook accepts the run, then the gateway's own
 * store takes the steps the run's loop would — the lease a worker holds, the committed steps,
 * the wait. The gateway must run without workers, or one would claim the run first.
 */
import { expect } from 'vitest';
import type { RunStep, WaitingFor } from '../../src/store/types.js';
import type { TestGateway } from './gateway.js';

const OWNER = 'test-loop';

export interface WaitingRunOptions {
  /** What the loop committed before the call; the call waits as the next step. */
  steps?: RunStep[];
  waitingFor: WaitingFor;
  message?: string;
}

/** Accepts a run through the hook and parks it `waiting`; answers its id. */
export async function waitingRun(gw: TestGateway, options: WaitingRunOptions): Promise<string> {
  const answer = await gw.hook('agent', { message: options.message ?? 'do the thing', deliver: false });
  expect(answer.status, answer.text).toBe(202);
  const runId = answer.body.runId as string;
  const { store } = gw.gateway;
  // Every queued run is claimed (the oldest come first), and the others put back as they were.
  const claimed = await store.runs.claimRuns(OWNER, Date.now(), 60_000, 1000);
  expect(claimed.map((run) => run.id)).toContain(runId);
  for (const other of claimed) if (other.id !== runId) await store.runs.releaseRun(other.id, OWNER);
  for (const step of options.steps ?? []) expect(await store.steps.append(runId, OWNER, step)).toBe(true);
  expect((await store.steps.wait(runId, OWNER, options.waitingFor, Date.now())).waiting).toBe(true);
  return runId;
}

/** A model step that asks for `call`, and the steps a waiting run typically has before it. */
export function modelStep(index: number, text: string, calls: WaitingFor[] = [], at = Date.now()): RunStep {
  return {
    kind: 'model',
    index,
    text,
    calls: calls.map((call, n) => ({
      callId: `call_${index}_${n}`,
      tool: call.tool,
      arguments: call.arguments,
    })),
    status: 'ok',
    startedAt: at,
    finishedAt: at + 800,
  };
}

export function toolStep(
  index: number,
  tool: string,
  args: Record<string, unknown>,
  result: string,
  status: 'ok' | 'error' | 'denied' = 'ok',
  at = Date.now(),
): RunStep {
  return {
    kind: 'tool',
    index,
    callId: `call_${index}`,
    tool,
    arguments: args,
    result,
    status,
    startedAt: at,
    finishedAt: at + 120,
  };
}
