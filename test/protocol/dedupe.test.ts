import { describe, expect, test } from 'vitest';
import { DedupeWindow } from '../../src/protocol/dedupe.js';

function clock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('DedupeWindow', () => {
  test('an id is known for the window after it was seen, then forgotten', () => {
    const c = clock();
    const window = new DedupeWindow(10_000, c.now);
    window.add('a');
    c.advance(9_999);
    expect(window.has('a')).toBe(true);
    c.advance(1);
    expect(window.has('a')).toBe(false);
    expect([...window.ids()]).toEqual([]);
  });

  test('addAt takes the acceptance time, in any order; one already expired is not kept', () => {
    const c = clock();
    const window = new DedupeWindow(10_000, c.now);
    window.addAt('late', c.now() - 9_000);
    window.addAt('gone', c.now() - 10_000);
    window.addAt('new', c.now());
    expect(window.has('late')).toBe(true);
    expect(window.has('gone')).toBe(false);
    expect([...window.ids()]).toEqual(['late', 'new']);
    c.advance(1_000);
    expect(window.has('late')).toBe(false);
    expect(window.has('new')).toBe(true);
  });

  test('an id added again moves to the end of the order and takes its new expiry; listed once', () => {
    const c = clock();
    const window = new DedupeWindow(10_000, c.now);
    window.add('a');
    window.add('b');
    c.advance(5_000);
    window.add('a');
    expect([...window.ids()]).toEqual(['b', 'a']);
    c.advance(5_000);
    expect(window.has('b')).toBe(false);
    expect(window.has('a')).toBe(true);
    c.advance(5_000);
    expect(window.has('a')).toBe(false);
  });

  test('two million ids, some added again and some deleted: the answers of a Map of expiries, in order', () => {
    const c = clock();
    const window = new DedupeWindow(120_000, c.now);
    const model = new Map<string, number>();
    for (let i = 0; i < 2_000_000; i++) {
      const id = `m-${i % 1_500_000}`; // the last 500,000 are added again
      window.add(id);
      model.delete(id);
      model.set(id, c.now() + 120_000);
      if (i % 100_000 === 0) c.advance(5_000);
      if (i % 7_777 === 0) {
        window.delete(`m-${i >> 1}`);
        model.delete(`m-${i >> 1}`);
      }
    }
    for (let i = 0; i < 1_500_000; i += 3_001) expect(window.has(`m-${i}`)).toBe((model.get(`m-${i}`) ?? 0) > c.now());
    c.advance(60_000);
    const alive = [...model].filter(([, at]) => at > c.now()).map(([id]) => id);
    expect([...window.ids()]).toEqual(alive);
    c.advance(120_000);
    expect([...window.ids()]).toEqual([]);
    expect(window.has('m-7')).toBe(false);
  });

  test('a window of 0 keeps nothing', () => {
    const c = clock();
    const none = new DedupeWindow(0, c.now);
    none.add('y');
    expect(none.has('y')).toBe(false);
  });
});
