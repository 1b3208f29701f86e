/**
 * A claimed run's tools (docs/agent-runs.md, "Tools"): its agent's `tools` narrowed by the
 * `tools` of the mapping that took its hook request, with the run's step log.
 */
import type { ResolvedAgent, ResolvedConfig } from '../config/resolved.js';
import type { StepsStore } from '../store/contract/steps.js';
import type { ToolSource } from '../tools/types.js';
import { memoryStepLog, storeStepLog } from './step-log.js';
import type { ApproveTool } from './tool-approval.js';
import type { TurnTools } from './turn.js';

export interface RunToolsDeps {
  tools?: ToolSource;
  /** Where steps are committed; absent: in memory only (a resumed run starts its loop over). */
  steps?: StepsStore;
  owner: string;
}

/** Undefined when the run has no tools: then its turn is one model call, as without tools. */
export async function runToolsFor(
  deps: RunToolsDeps,
  config: ResolvedConfig,
  run: { id: string; source: string },
  agent: ResolvedAgent,
  approve?: ApproveTool,
): Promise<TurnTools | undefined> {
  if (!deps.tools || !agent.tools) return undefined;
  const set = await deps.tools.forRun(agent.tools, mappingTools(config, run.source));
  if (!set) return undefined;
  const steps = deps.steps ? await storeStepLog(deps.steps, run.id, deps.owner) : memoryStepLog();
  return { set, steps, ...(approve ? { approve } : {}) };
}

/** The hooks that are never a mapping's (docs/callers.md). */
const BUILT_IN_HOOKS = new Set(['wake', 'agent']);

/**
 * The `tools` of the mapping behind a run source `hook:<name>`; undefined when no mapping
 * narrows it. A run records its hook's name, not which mapping took it: when more than one
 * mapping could have (a mapping without `match.path` takes any name), only the selectors
 * every narrowing candidate names are kept, so a run never gets a tool its mapping would
 * not give it.
 */
export function mappingTools(config: ResolvedConfig, source: string): readonly string[] | undefined {
  if (!source.startsWith('hook:')) return undefined;
  const name = source.slice('hook:'.length);
  if (BUILT_IN_HOOKS.has(name)) return undefined;
  const lists = config.hooks.mappings
    .filter((mapping) => mapping.match?.path === undefined || mapping.match.path === name)
    .flatMap((mapping) => (mapping.tools ? [mapping.tools] : []));
  const [first, ...others] = lists;
  if (!first) return undefined;
  return first.filter((selector) => others.every((list) => list.includes(selector)));
}
