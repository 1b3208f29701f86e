/**
 * Vitest's file order: the files known to take longest first, then Vitest's own
 * order (its cache of the last run's durations, else the larger files first). On
 * a fresh clone there is no cache, and a long file started last would run alone
 * while the other workers idle.
 */
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The slowest files of a full run on the 2-core machine, under load (load average 7–14; seconds, indicative), longest first. */
const SLOWEST: Record<string, number> = {
  'test/e2e/platforms.test.ts': 153,
  'test/e2e/cli-config.test.ts': 120,
  'test/e2e/agent-loop.test.ts': 93,
  'test/e2e/durability.test.ts': 73,
  'test/gmail/google.test.ts': 67,
  'test/observability/export-failures.test.ts': 67,
  'test/store/conformance.test.ts': 61,
  'test/e2e/one-writer.test.ts': 50,
  'test/dashboard/dashboard.test.ts': 39,
  'test/mappings/transforms.test.ts': 39,
  'test/tools/mcp-stdio.test.ts': 39,
  'test/agents/safety.test.ts': 36,
  'test/e2e/tools.test.ts': 33,
  'test/observability/trace-takeover.test.ts': 30,
  'test/ingress/lockout.test.ts': 28,
  'test/server/admin-runs.test.ts': 27,
  'test/store/sqlite-store.test.ts': 27,
  'test/mappings/transform-isolation.test.ts': 26,
  'test/agents/injection-corpus.test.ts': 23,
  'test/deploy/systemd.test.ts': 23,
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
