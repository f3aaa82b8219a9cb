import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The order in which the suite's two workers (vitest.config.ts) take test files: the longest first,
 * so that no long file starts last and runs alone at the end. Vitest orders by the durations of its
 * previous run when it has them (node_modules/.vite/vitest), and a clean clone, as in CI, has
 * none: it would order by file size, and the 3-minute nemesis is a 41-line file. So the files below,
 * the longest of a clean-clone run (seconds, one worker, 2026-12-06), go first in this order, the
 * rest after them as vitest orders them. Mostly waiting (heartbeat timeouts, failovers, etcd
 * leases), they overlap well with the other worker's files.
 */
const LONGEST = [
  'test/nemesis/nemesis.test.ts', // ~260 s (a second with NEMESIS=0)
  'test/broker/mirror/partition.test.ts', // 56
  'test/broker/mirror/election.test.ts', // 44
  'test/broker/mirror/election-outage.test.ts', // 40
  'test/broker/mirror/listener-cut.test.ts', // 39
  'test/broker/mirror/catch-up-backlog.test.ts', // 33-39
  'test/broker/cluster/move.test.ts', // 34
  'test/broker/mirror/failover.test.ts', // 31
  'test/broker/mirror/slave-lag.test.ts', // 29
  'test/broker/mirror/keys-three.test.ts', // 28
  'test/broker/mirror/history-order.test.ts', // 26
  'test/broker/session/hostile.test.ts', // 23
  'test/broker/cluster/operate.test.ts', // 21
  'test/broker/mirror/election-start.test.ts', // 20
  'test/client/redial.test.ts', // 19
  'test/broker/cluster/faults.test.ts', // 19
  'test/client/touch.test.ts', // 19
  'test/broker/mirror/history-catch-up.test.ts', // 18
  'test/protocol/protocol.test.ts', // 17
];

const rank = (spec: TestSpecification): number => {
  const index = LONGEST.findIndex((file) => spec.moduleId.endsWith(`/${file}`));
  return index === -1 ? LONGEST.length : index;
};

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const byVitest = await super.sort(files);
    return byVitest.map((spec, at) => ({ spec, at })).sort((x, y) => rank(x.spec) - rank(y.spec) || x.at - y.at).map(({ spec }) => spec);
  }
}
