import { describe, expect, test } from 'vitest';
import { type Stranger, Strangers } from '../../../src/broker/session/strangers.js';

/** The strangers' budget alone (issue 18, issue 27 item 10): the per-address share bites only at the total. */
function stranger(address: string, evicted: string[], name: string): Stranger {
  return { address, evict: () => void evicted.push(name) };
}

describe('strangers', () => {
  test('below the total nobody is closed, whatever the address: one address may hold more than its share', () => {
    const evicted: string[] = [];
    const budget = new Strangers();
    const limits = { total: 10, perAddress: 2 };
    for (let i = 0; i < 10; i++) budget.admit(stranger('nat', evicted, `n${i}`), limits);
    expect(evicted).toEqual([]);
    expect(budget.size).toBe(10);
  });

  test('at the total, the oldest of the address most past its share goes; with none past it, the oldest of all', () => {
    const evicted: string[] = [];
    const budget = new Strangers();
    const limits = { total: 6, perAddress: 2 };
    budget.admit(stranger('a', evicted, 'a1'), limits);
    budget.admit(stranger('b', evicted, 'b1'), limits);
    budget.admit(stranger('b', evicted, 'b2'), limits);
    budget.admit(stranger('b', evicted, 'b3'), limits);
    budget.admit(stranger('c', evicted, 'c1'), limits);
    budget.admit(stranger('c', evicted, 'c2'), limits);
    budget.admit(stranger('c', evicted, 'c3'), limits); // full: b (3 > 2) has the most, oldest b1 goes
    expect(evicted).toEqual(['b1']);
    budget.admit(stranger('a', evicted, 'a2'), limits); // full: b and c hold 2 and 3, c's c1 goes
    expect(evicted).toEqual(['b1', 'c1']);
    budget.admit(stranger('d', evicted, 'd1'), limits); // every address within its share: the oldest of all
    expect(evicted).toEqual(['b1', 'c1', 'a1']);
    expect(budget.size).toBe(6);
  });

  test('a flood from one address fills the total, then only pushes out its own: the others stay', () => {
    const evicted: string[] = [];
    const budget = new Strangers();
    const limits = { total: 50, perAddress: 20 };
    budget.admit(stranger('client', evicted, 'real'), limits);
    for (let i = 0; i < 2000; i++) budget.admit(stranger('flood', evicted, `f${i}`), limits);
    expect(evicted).not.toContain('real');
    expect(evicted).toHaveLength(2000 - 49);
    expect(budget.size).toBe(50);
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
