import { describe, expect, test } from 'vitest';
import { RateHistory } from '../../src/ops/history.js';

/** The dashboard's rate history (src/ops/history.ts): fixed memory, rates per second between samples. */
const counters = (received: number, delivered = 0) => ({ received, delivered, acked: 0, requeued: 0, timedOut: 0, deadLettered: 0, dropped: 0, expired: 0 });

describe('rate history', () => {
  test('a sample per step, rates between samples, then a live point', () => {
    const h = new RateHistory({ stepMs: 2000, maxPoints: 3, maxQueues: 2 });
    h.record(0, [{ name: 'a/v1', counters: counters(0) }]);
    h.record(1000, [{ name: 'a/v1', counters: counters(5) }]); // within the step: not kept
    h.record(2000, [{ name: 'a/v1', counters: counters(10) }, { name: 'b/v1', counters: counters(4) }]);
    const points = h.points(3000, [{ name: 'a/v1', counters: counters(13) }, { name: 'b/v1', counters: counters(4) }]);
    expect(points.map((p) => [p.at, p.total.received, p.queues['a/v1']?.received, p.queues['b/v1']?.received])).toEqual([
      [2000, 7, 5, 2], // b/v1 is new since the sample before: it started from zero
      [3000, 3, 3, 0],
    ]);
  });

  test('at most maxPoints points and maxQueues queues (the busiest), whatever clients do', () => {
    const h = new RateHistory({ stepMs: 1000, maxPoints: 3, maxQueues: 2 });
    for (let t = 0; t <= 10; t++) h.record(t * 1000, ['a', 'b', 'c'].map((q, i) => ({ name: `${q}/v1`, counters: counters(t * (i + 1)) })));
    const points = h.points(10_500, []);
    expect(points.map((p) => p.at)).toEqual([8000, 9000, 10_000]);
    expect(Object.keys(points[0]!.queues).sort()).toEqual(['b/v1', 'c/v1']);
    expect(points[2]!.queues['c/v1']!.received).toBe(3);
    expect(points[2]!.total.received).toBe(6);
  });
});
