/**
 * Which mapping narrows a run's tools (src/agents/run-tools.ts): the run records its
 * hook's name; the mappings that could have taken it narrow it, never widen it.
 */
import { describe, expect, it } from 'vitest';
import { mappingTools } from '../../../src/agents/run-tools.js';
import type { ResolvedConfig } from '../../../src/config/resolved.js';

function config(mappings: { id?: string; match?: { path?: string }; tools?: string[] }[]): ResolvedConfig {
  return { hooks: { mappings } } as unknown as ResolvedConfig;
}

describe("a run's mapping tools", () => {
  it('takes the tools of the mapping whose path is the hook name', () => {
    const c = config([
      { id: 'github', match: { path: 'github' }, tools: ['repo.get_pull_request'] },
      { id: 'jira', match: { path: 'jira' }, tools: ['tickets.*'] },
    ]);
    expect(mappingTools(c, 'hook:github')).toEqual(['repo.get_pull_request']);
    expect(mappingTools(c, 'hook:jira')).toEqual(['tickets.*']);
  });

  it('does not narrow the built-in hooks, other sources, or mappings without tools', () => {
    const c = config([
      { id: 'github', match: { path: 'github' } },
      { id: 'any', tools: ['repo.*'] },
    ]);
    expect(mappingTools(c, 'hook:agent')).toBeUndefined();
    expect(mappingTools(c, 'heartbeat')).toBeUndefined();
    expect(mappingTools(config([{ match: { path: 'github' } }]), 'hook:github')).toBeUndefined();
  });

  it('keeps only what every narrowing candidate names when several mappings could have taken it', () => {
    const c = config([
      { match: { path: 'github' }, tools: ['repo.get_pull_request', 'repo.get_diff'] },
      { tools: ['repo.get_diff'] },
      { match: { path: 'github' } },
    ]);
    expect(mappingTools(c, 'hook:github')).toEqual(['repo.get_diff']);
  });
});
