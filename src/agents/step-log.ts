/**
 * A run's durable steps as its tool loop sees them (docs/agent-runs.md, "Tools"): the
 * steps committed before this attempt, to resume from, and a way to commit the next one.
 * Every finished model call and tool call is committed before the loop goes on, so a run
 * resumed after a crash gives the model what was done and repeats no tool call.
 */
import type { RunStep, StepsStore } from '../store/contract/steps.js';

export interface StepLog {
  /** The steps committed before this attempt, in index order; empty for a first attempt. */
  readonly steps: readonly RunStep[];
  /** Commits one finished step; rejects when it cannot, which ends the loop (and the attempt). */
  append(step: RunStep): Promise<void>;
}

/** Another worker owns the run now: this attempt must stop before it does anything more. */
export class StepLeaseLost extends Error {
  constructor(runId: string) {
    super(`the lease of run ${runId} was lost while committing a step; another worker owns it now`);
    this.name = 'StepLeaseLost';
  }
}

/** The log of one run in the store, committed under `owner`'s lease. */
export async function storeStepLog(store: StepsStore, runId: string, owner: string): Promise<StepLog> {
  const steps = await store.list(runId);
  return {
    steps,
    async append(step) {
      if (!(await store.append(runId, owner, step))) throw new StepLeaseLost(runId);
    },
  };
}

/** A log kept in memory only: for turns with tools that nothing resumes (tests, tools without a store). */
export function memoryStepLog(committed: readonly RunStep[] = []): StepLog & { readonly all: RunStep[] } {
  const all = [...committed];
  return {
    steps: committed,
    all,
    async append(step) {
      all.push(step);
    },
  };
}
