import { describe, expect, test } from 'vitest';
import { Cluster } from '../../../src/broker/cluster/cluster.js';
import { StatsSampler } from '../../../src/broker/cluster/stats.js';
import { type BrokerStats, decodeMember } from '../../../src/broker/cluster/types.js';
import type { ClusterFrame } from '../../../src/protocol/cluster.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { clusterSpec } from '../../support/cluster.js';
import { startEtcd } from '../../support/etcd.js';
import { brokerConfig, until } from '../../support/harness.js';

/** what a broker publishes of its queues for `whisker cluster status` (src/broker/cluster/stats.ts) */
const queue = (name: string, received: number, delivered = 0, acked = 0, depth = 0, inFlightCount = 0) => ({ name, depth, inFlightCount, counters: { received, delivered, acked } });

describe('cluster stats', () => {
  test('rates are per second since the previous sample, per queue: a queue forgotten or made again in between changes no other rate', () => {
    const sampler = new StatsSampler();
    expect(sampler.sample(0, [queue('a/v1', 100), queue('b/v1', 50)])).toEqual({ queues: 2, waiting: 0, inFlight: 0, rates: { received: 0, delivered: 0, acked: 0 } });
    // 5 s later: a took 500 more, b was forgotten, c is new with 25
    const stats = sampler.sample(5_000, [queue('a/v1', 600, 400, 300, 7, 2), queue('c/v1', 25)]);
    expect(stats).toEqual({ queues: 2, waiting: 7, inFlight: 2, rates: { received: 105, delivered: 80, acked: 60 } });
    // a queue made again restarts from zero: never a negative rate
    expect(sampler.sample(10_000, [queue('a/v1', 10)]).rates.received).toBe(2);
  });

  test.each([
    ['no stats (an older broker)', {}, null],
    ['a negative count', { stats: { queues: -1, waiting: 0, inFlight: 0, rates: { received: 0, delivered: 0, acked: 0 } } }, null],
    ['a rate that is text', { stats: { queues: 1, waiting: 0, inFlight: 0, rates: { received: '9', delivered: 0, acked: 0 } } }, null],
    ['well formed', { stats: { queues: 1, waiting: 2, inFlight: 3, rates: { received: 4.5, delivered: 4, acked: 4 } } }, { queues: 1, waiting: 2, inFlight: 3, rates: { received: 4.5, delivered: 4, acked: 4 } }],
  ])('a member key with %s', (_, extra, stats) => {
    expect(decodeMember('a1', JSON.stringify({ advertise: 'h:1@a1', weight: 1, isMaster: true, epoch: 3, ...extra }))?.stats).toEqual(stats);
  });
});

describe('cluster stats in etcd (real etcd)', () => {
  test('published every 5 s when they change, read by the other brokers; clients are not told (a stats or role update is no new host)', async () => {
    const etcd = await startEtcd();
    const spec = clusterSpec(etcd.url);
    let received = 0;
    const frames: ClusterFrame[] = [];
    const make = async (set: string, serviceId: string, stats?: () => BrokerStats, told?: ClusterFrame[]) => {
      const config = brokerConfig({ serviceId, election: { etcd: { hosts: [etcd.url] }, prefix: `${spec.prefix}-sets/${set}` }, cluster: { prefix: spec.prefix, set, advertise: `127.0.0.1:1@${serviceId}` } });
      const cluster = await Cluster.create(config.cluster!, config.election!, serviceId, createLogger('silent'), {
        pin: () => undefined, deadLetterOf: () => undefined, deadLetterSources: () => [], maxPlacements: () => 100, keyUnbound: () => undefined,
        changed: (changes) => void told?.push(...changes.filter((f) => f.sets)),
        ...(stats ? { stats } : {}),
      });
      cluster.start();
      closing.push(() => cluster.close());
      return cluster;
    };
    const closing: Array<() => Promise<void>> = [];
    try {
      await make('a', 'a1', () => ({ queues: 1, waiting: 0, inFlight: 0, rates: { received: (received += 10), delivered: 0, acked: 0 } }));
      // what b1 would tell its clients of a1, once it has seen a1 register
      const reader = await make('b', 'b1', undefined, frames);
      await until(() => reader.view().sets.length === 2, 10_000, 'both registered');
      await new Promise((resolve) => setTimeout(resolve, 50)); // its coalesced frame is flushed
      const told = frames.length;
      const statsOfA = () => reader.view().sets.find((s) => s.name === 'a')!.brokers[0]!.stats;
      await until(() => (statsOfA()?.rates.received ?? 0) >= 20, 15_000, 'two publications of a1 read by b1');
      expect(statsOfA()).toMatchObject({ queues: 1 });
      expect(frames.length - told).toBe(0);
    } finally {
      for (const close of closing) await close();
    }
  }, 30_000);
});
