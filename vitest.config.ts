import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';
import { SlowFirst } from './test/helpers/slow-first.js';

/**
 * The files that must each get a fresh module graph: they mock a module
 * (`vi.mock` / `vi.doMock` of node:crypto), which a worker shared with other
 * files would carry over. Every other file shares its worker's modules with the
 * files run before it there (docs/development.md, "How the tests run").
 */
const ISOLATED = ['test/agents/injection-corpus.test.ts', 'test/agents/safety.test.ts'];

export default defineConfig({
  test: {
    // The fault tests load the machine on purpose; they run alone (`npm run test:faults`).
    exclude: [...configDefaults.exclude, 'test/faults/**'],
    // Tests start real servers and real CLI processes; give them room on a 2-core machine.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Vitest's default is one file at a time per core less one: on a 2-core machine, one file at
    // a time. Most files spend their time waiting on real servers, processes and timers, not on
    // the CPU, so three at a time: 282 s for the suite on the quiet 2-core machine. In `.ci/run`,
    // where the other Nodes are compiled beside it on one core, it took 421 s (422 s at two).
    // Since then `.ci/run` no longer compiles them beside it once ~/.cache/agentgate-ci holds their
    // node_modules (.ci/other-nodes.sh: a warm prepare is 10–30 s of CPU, a cold one ~344 s), and a
    // SQLite store starts its checkpointer thread only once its WAL holds 1 MiB, which test
    // gateways never reach (start and stop 202 → 75 ms of CPU); docs/development.md has the figures.
    maxWorkers: Math.max(3, availableParallelism() - 1),
    // The longest files start first, so none of them is left running alone at the end.
    sequence: { sequencer: SlowFirst },
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/faults/**', ...ISOLATED],
          // A worker runs file after file without re-importing the gateway's modules for each:
          // importing them through Vite took ~2.5 s of CPU per file, most of the suite's CPU.
          isolate: false,
        },
      },
      { extends: true, test: { name: 'isolated', include: ISOLATED } },
    ],
  },
});
