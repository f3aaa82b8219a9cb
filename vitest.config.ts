import { defineConfig } from 'vitest/config';
import LongestFirst from './test/support/sequencer.js';
import { makeTempRoot } from './test/support/temp-root.js';

makeTempRoot();

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // one temporary folder per run, removed at its end (test/support/temp-root.ts)
    globalSetup: ['test/support/temp-root.ts'],
    // a deadline for a hung test, not a measure: tests that start CLI or broker processes took
    // over 20 s with two workers on a machine at load 25-50 (other runs beside the suite)
    testTimeout: 60_000,
    hookTimeout: 60_000,
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
