import { describe, expect, test } from 'vitest';
import { checkHeap, checkMessages, checkOneDeliverer, FEED, JOBS, type Recorded } from './checker.js';
import type { Sample } from './cluster.js';
import { describe as describeFault, FAULT_KINDS, schedule } from './schedule.js';

/**
 * The nemesis's schedule and checker on made-up records (issue 27): the same seed gives the
 * same schedule, and each check fails on the fault it is there to catch.
 */
const clean = (): Recorded => ({
  sends: [{ [JOBS]: [0, 2], [FEED]: [1, 3] }, { [JOBS]: [4], [FEED]: [5] }],
  outcome: [{ [JOBS]: [[0, 'ok'], [2, 'ok']], [FEED]: [[1, 'ok'], [3, 'ok']] }, { [JOBS]: [[4, 'ok']], [FEED]: [[5, 'ok']] }],
  listened: { [JOBS]: [[0, 0], [1, 4], [0, 2]], [FEED]: [[0, 1], [1, 5], [0, 3]] },
  consumed: [[[0, 0], [1, 4]], [[0, 2]]],
  replays: [{ at: 0, complete: true, got: [[0, 1], [0, 3]] }],
  final: [[0, 1], [1, 5], [0, 3]],
  finalError: null,
  pending: 0,
  errors: {},
});
const failing = (r: Recorded, elections = 0) => checkMessages(r, [], elections, 10).filter((v) => !v.ok).map((v) => v.check);

describe('schedule', () => {
  test('the same seed gives the same schedule; another seed another; every kind comes first', () => {
    const a = schedule(42, 600_000).map(describeFault);
    expect(schedule(42, 600_000).map(describeFault)).toEqual(a);
    expect(schedule(43, 600_000).map(describeFault)).not.toEqual(a);
    expect(new Set(schedule(42, 600_000).slice(0, FAULT_KINDS.length).map((f) => f.kind))).toEqual(new Set(FAULT_KINDS));
  });
});

describe('checker', () => {
  test('a clean record passes every check', () => {
    expect(failing(clean())).toEqual([]);
  });

  test('an answered send nobody got is lost, naming the channel and the id', () => {
    const r = clean();
    r.listened[FEED] = r.listened[FEED].filter(([p, s]) => !(p === 1 && s === 5));
    r.final = r.final.filter(([p]) => p === 0);
    const verdicts = checkMessages(r, [], 0, 10);
    expect(verdicts.find((v) => v.check === `lost (listener, ${FEED})`)).toMatchObject({ ok: false, detail: expect.stringContaining('1:5') as string });
    expect(failing(r)).toContain(`replay equals the answered sends (${FEED})`);
  });

  test('first deliveries out of one producer\'s order, in the listener or the replay', () => {
    const r = clean();
    r.listened[FEED] = [[0, 3], [1, 5], [0, 1]];
    r.final = [[0, 3], [0, 1], [1, 5]];
    expect(failing(r)).toEqual([`order of first deliveries (listener, ${FEED})`, `replay equals the answered sends (${FEED})`]);
  });

  test('duplicates: none past the listener\'s dedupe; for consumers, the prefetch per fault and per election', () => {
    const r = clean();
    r.consumed[1]!.push(...Array.from({ length: 11 }, (): [number, number] => [0, 0]));
    expect(failing(r)).toEqual([`duplicates (consumers, ${JOBS})`]);
    expect(failing(r, 2)).toEqual([]);
    r.listened[JOBS].push([0, 0]);
    expect(failing(r, 2)).toEqual([`duplicates (listener, ${JOBS})`]);
  });

  test('two brokers delivering, or saying master, for 750 ms or more', () => {
    const series = (from: number, to: number, role: number) => Array.from({ length: 20 }, (_, i): Sample => ({ t: 1_000_000 + i * 250, up: 1, role, delivered: i >= from && i <= to ? i : Math.min(Math.max(i, from), to) }));
    const one = new Map([['a', series(0, 19, 1)], ['b', series(30, 40, 0)]]);
    expect(checkOneDeliverer(one, 250).every((v) => v.ok)).toBe(true);
    const handover = new Map([['a', series(0, 9, 1)], ['b', series(11, 19, 0)]]);
    expect(checkOneDeliverer(handover, 250).every((v) => v.ok)).toBe(true);
    const both = new Map([['a', series(0, 19, 1)], ['b', series(5, 12, 1)]]);
    expect(checkOneDeliverer(both, 250).filter((v) => !v.ok).map((v) => v.check)).toEqual(['never two brokers delivering at once', 'never two brokers acting as master at once']);
  });

  test('a heap whose floor climbs fails; a flat one with noise passes', () => {
    const heap = (mibPerMin: number) => Array.from({ length: 300 }, (_, i): Sample => ({ t: i * 250, up: 1, role: 0, heap: (30 + (mibPerMin * i) / 240 + (i % 7 === 0 ? 0 : 8)) * (1 << 20) }));
    expect(checkHeap(new Map([['flat', heap(0)], ['leak', heap(10)]]), 0, 75_000, 4).map((v) => v.ok)).toEqual([true, false]);
  });
});
