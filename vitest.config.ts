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
  },
});
