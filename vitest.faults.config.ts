import { defineConfig } from 'vitest/config';

/**
 * `npm run test:faults`: the fault and hostile-input tests (kill -9 and SIGTERM
 * at load, fuzzing, slow connections, the lockout under an address flood, a
 * store that fills up or goes read-only, the store bounded by retention under
 * steady load, runs flooded with marker look-alikes, the WAL sync before each 2xx
 * under strace) plus the boundary's injection corpus.
 * They load the 2-core machine on purpose, so files run one at a time.
 * FAULTS_SHORT=1 is the CI size (about three minutes).
 */
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts', 'test/agents/injection-corpus.test.ts'],
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
