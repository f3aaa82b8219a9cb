import { describe, expect, test } from 'vitest';
import { rendezvous } from '../../../src/broker/cluster/rendezvous.js';

/** weighted rendezvous hashing (SPEC §13): same answer everywhere, spread by weight, little churn */
describe('rendezvous placement', () => {
  const queues = Array.from({ length: 3000 }, (_, i) => `q${i}/v1`);
  const count = (sets: Array<{ name: string; weight: number }>) => {
    const counts = new Map<string, number>();
    for (const q of queues) counts.set(rendezvous(q, sets)!, (counts.get(rendezvous(q, sets)!) ?? 0) + 1);
    return counts;
  };

  test('spreads by weight: 1:1 about even, 1:3 about a quarter', () => {
    const even = count([{ name: 'a', weight: 1 }, { name: 'b', weight: 1 }]);
    expect(even.get('a')! / queues.length).toBeGreaterThan(0.45);
    expect(even.get('a')! / queues.length).toBeLessThan(0.55);
    const skewed = count([{ name: 'a', weight: 1 }, { name: 'b', weight: 3 }]);
    expect(skewed.get('a')! / queues.length).toBeGreaterThan(0.2);
    expect(skewed.get('a')! / queues.length).toBeLessThan(0.3);
  });

  test('the order of the sets does not matter; a third set takes only what it wins', () => {
    const two = [{ name: 'a', weight: 1 }, { name: 'b', weight: 1 }];
    const three = [...two, { name: 'c', weight: 1 }];
    for (const q of queues) {
      expect(rendezvous(q, [...two].reverse())).toBe(rendezvous(q, two));
      const now = rendezvous(q, three);
      if (now !== 'c') expect(now).toBe(rendezvous(q, two));
    }
    expect(rendezvous('x/1', [])).toBeNull();
  });
});
