/**
 * Vitest's file order: the files known to take longest first, then Vitest's own
 * order (its cache of the last run's durations, else the larger files first). On
 * a fresh clone there is no cache, and a long file started last would run alone
 * while the other workers idle.
 */
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The slowest files of a full run on the 2-core machine, under load (seconds, indicative), longest first. */
const SLOWEST: Record<string, number> = {
  'test/e2e/platforms.test.ts': 69,
  'test/store/conformance.test.ts': 66,
  'test/e2e/agent-loop.test.ts': 49,
  'test/e2e/cli-config.test.ts': 41,
  'test/dashboard/dashboard.test.ts': 29,
  'test/e2e/durability.test.ts': 22,
  'test/observability/export-failures.test.ts': 19,
  'test/gmail/google.test.ts': 18,
  'test/e2e/one-writer.test.ts': 18,
  'test/mappings/transform-runaway.test.ts': 16,
  'test/observability/trace-takeover.test.ts': 16,
  'test/e2e/tools.test.ts': 16,
  'test/e2e/cli-operator.test.ts': 14,
  'test/server/admin-runs.test.ts': 14,
  'test/tools/mcp-stdio.test.ts': 14,
  'test/agents/safety.test.ts': 13,
  'test/dashboard/failures.test.ts': 12,
  'test/mappings/transform-isolation.test.ts': 12,
  'test/mappings/transforms.test.ts': 12,
  'test/server/readyz.test.ts': 12,
};

export class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const known = (spec: TestSpecification) =>
      SLOWEST[relative(spec.project.config.root, spec.moduleId)] ?? 0;
    // A stable sort: the files not listed keep Vitest's order behind the listed ones.
    return sorted
      .map((spec, index) => ({ spec, index, seconds: known(spec) }))
      .sort((a, b) => b.seconds - a.seconds || a.index - b.index)
      .map(({ spec }) => spec);
  }
}
