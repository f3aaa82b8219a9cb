import { describe, expect, test } from 'vitest';
import { type Stranger, Strangers } from '../../../src/broker/session/strangers.js';

/** The strangers' budget alone (issue 18): the oldest makes room, of the newcomer's address first. */
function stranger(address: string, evicted: string[], name: string): Stranger {
  return { address, evict: () => void evicted.push(name) };
}

describe('strangers', () => {
  test('past the per-address bound the oldest of that address goes; past the total the oldest of all', () => {
    const evicted: string[] = [];
    const budget = new Strangers();
    const limits = { total: 4, perAddress: 2 };
    const a1 = stranger('a', evicted, 'a1');
    budget.admit(a1, limits);
    budget.admit(stranger('b', evicted, 'b1'), limits);
    budget.admit(stranger('a', evicted, 'a2'), limits);
    budget.admit(stranger('a', evicted, 'a3'), limits); // a has 2 already: a1 goes
    expect(evicted).toEqual(['a1']);
    budget.admit(stranger('c', evicted, 'c1'), limits);
    budget.admit(stranger('d', evicted, 'd1'), limits); // 4 in total: the oldest (b1) goes
    expect(evicted).toEqual(['a1', 'b1']);
    expect(budget.size).toBe(4);
    budget.settle(a1); // already gone: nothing changes
    expect(budget.size).toBe(4);
  });

  test('a settled stranger (authenticated or closed) frees its place', () => {
    const evicted: string[] = [];
    const budget = new Strangers();
    const limits = { total: 2, perAddress: 2 };
    const first = stranger('a', evicted, 'first');
    budget.admit(first, limits);
    budget.admit(stranger('a', evicted, 'second'), limits);
    budget.settle(first);
    budget.admit(stranger('a', evicted, 'third'), limits);
    expect(evicted).toEqual([]);
    expect(budget.size).toBe(2);
  });
});
