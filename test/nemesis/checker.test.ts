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

  test('a redelivery whose first delivery never reached the listener may come after newer first deliveries (SPEC §7); a first delivery may not', () => {
    const r = clean();
    r.listened[FEED] = [[0, 3, 0], [1, 5, 0], [0, 1, 1]];
    const verdict = checkMessages(r, [], 0, 10).find((v) => v.check === `order of first deliveries (listener, ${FEED})`);
    expect(verdict).toMatchObject({ ok: true, detail: expect.stringContaining('1 redeliveries') as string });
    r.listened[FEED] = [[0, 3, 0], [1, 5, 0], [0, 1, 0]];
    expect(failing(r)).toEqual([`order of first deliveries (listener, ${FEED})`]);
  });

  test('duplicates: none past the listener\'s dedupe; for consumers, the prefetch per fault and per election', () => {
    const r = clean();
    r.consumed[1]!.push(...Array.from({ length: 11 }, (): [number, number] => [0, 0]));
    expect(failing(r)).toEqual([`duplicates (consumers, ${JOBS})`]);
    expect(failing(r, 2)).toEqual([]);
    r.listened[JOBS].push([0, 0]);
    expect(failing(r, 2)).toEqual([`duplicates (listener, ${JOBS})`]);
  });

  test('listener: a copy past the client\'s dedupeWindow after its first is counted apart, with its delay; one within it fails', () => {
    const r = clean();
    // [p, s, nbRequeues, arrival ms]: 1:5 again 130 s after the first (a master that never saw the ack, back after an outage)
    r.listened[FEED] = [[0, 1, 0, 1_000], [1, 5, 0, 2_000], [0, 3, 0, 3_000], [1, 5, 3, 132_000]];
    const feed = checkMessages(r, [], 0, 10).find((v) => v.check === `duplicates (listener, ${FEED})`)!;
    expect(feed).toMatchObject({ ok: true, detail: expect.stringContaining('1 more than 120 s after the first (1:5 after 130 s)') as string });
    r.listened[FEED].push([0, 3, 1, 100_000]);
    expect(failing(r)).toEqual([`duplicates (listener, ${FEED})`]);
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

  const RULE = { boundMiBPerMin: 4, warmMs: 75_000, minMeasureMs: 60_000 };
  /** a sample every 250 ms from `t0` for `seconds`; `mib(s)` the heap after GC at second s, 8 MiB of garbage on most samples */
  const series = (t0: number, seconds: number, mib: (s: number) => number) =>
    Array.from({ length: seconds * 4 }, (_, i): Sample => ({ t: t0 + i * 250, up: 1, role: 0, heap: (mib(i / 4) + (i % 7 === 0 ? 0 : 8)) * (1 << 20) }));

  test('a heap whose floor climbs fails; a flat one with noise passes', () => {
    const started = new Map([['flat', -600_000], ['leak', -600_000]]);
    const heaps = new Map([['flat', series(0, 75, () => 30)], ['leak', series(0, 75, (s) => 30 + s / 6)]]);
    expect(checkHeap(heaps, 0, 75_000, RULE, started).map((v) => v.ok)).toEqual([true, false]);
  });

  test('a broker restarted just before the calm phase is judged once its dedupe tables are full: warm-up passes, a leak after it fails', () => {
    // restarted 1 s before the calm phase: +5 MiB over its first 60 s (the dedupe window filling), then flat or +10 MiB/min
    const warmThen = (after: number) => (s: number) => 25 + 5 * Math.min(1, (s + 1) / 60) + (s + 1 > 60 ? (after * (s + 1 - 60)) / 60 : 0);
    const heaps = new Map([['warm', series(0, 140, warmThen(0))], ['leak', series(0, 140, warmThen(10))]]);
    const started = new Map([['warm', -1_000], ['leak', -1_000]]);
    const verdicts = checkHeap(heaps, 0, 140_000, RULE, started);
    expect(verdicts.map((v) => v.ok)).toEqual([true, false]);
    expect(verdicts[0]!.detail).toMatch(/measured from 74 s into the calm phase \(started 1 s before it/);
    // judged from its start instead, the warm-up alone looks like growth (the check before issue 27's diagnosis)
    expect(checkHeap(heaps, 0, 75_000, { ...RULE, warmMs: 0 }, started)[0]!.ok).toBe(false);
  });

  test('a floor measured while the broker stalled says so: how many samples it did not answer, and its longest silence', () => {
    // a broker that answered no /metrics for 12 s in the middle (a loaded machine), its floor rising after it
    const stalled = series(0, 75, (s) => (s < 40 ? 30 : 40)).map((x): Sample => (x.t >= 20_000 && x.t < 32_000 ? { t: x.t, up: 0 } : x));
    const verdict = checkHeap(new Map([['stalled', stalled]]), 0, 75_000, RULE, new Map([['stalled', -600_000]]))[0]!;
    expect(verdict.ok).toBe(false);
    expect(verdict.detail).toMatch(/48 of 300 samples unanswered within 1 s \(16%\), the longest silence 12 s: the broker stalled/);
  });

  test('too little measured after the warm-up fails rather than passing unseen', () => {
    const verdict = checkHeap(new Map([['late', series(0, 75, () => 30)]]), 0, 75_000, RULE, new Map([['late', -1_000]]))[0]!;
    expect(verdict.ok).toBe(false);
    expect(verdict.detail).toMatch(/only 0 windows of 10 s sampled after warm-up \(6 needed\)/);
  });
});
