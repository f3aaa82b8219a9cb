import { describe, expect, test } from 'vitest';
import { StatsSampler } from '../../../src/broker/cluster/stats.js';
import { decodeMember } from '../../../src/broker/cluster/types.js';

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
