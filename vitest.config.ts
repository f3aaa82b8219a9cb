import { defineConfig } from 'vitest/config';
import LongestFirst from './test/support/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
    // Two files at a time, whatever the core count (vitest's default is one fewer worker than
    // cores: one, on a 2-core CI machine). Most of the suite's time is waiting on heartbeats,
    // failovers and etcd leases, not CPU; each worker draws broker ports from its own slice
    // (test/support/ports.ts).
    maxWorkers: 2,
    minWorkers: 1,
    sequence: { sequencer: LongestFirst },
  },
});
