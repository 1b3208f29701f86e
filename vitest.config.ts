import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The fault tests load the machine on purpose; they run alone (`npm run test:faults`).
    exclude: [...configDefaults.exclude, 'test/faults/**'],
    // Tests start real servers and real CLI processes; give them room on a 2-core machine.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Vitest's default is one file at a time per core less one: on a 2-core machine, one file at
    // a time. Most files spend their time waiting on real servers, processes and timers, not on
    // the CPU, so two at a time there roughly halves the wall time (measured: ~7 min → 3 min 38 s,
    // no test slower than its own bound).
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
