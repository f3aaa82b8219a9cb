import { describe, expect, test } from 'vitest';
import { DeltaPages, Float64Pages, SparseUint32Pages } from '../../src/protocol/paged.js';

/** the entries where the pages and the model disagree (expect per entry is too slow for 100,000) */
function wrong(pages: DeltaPages, model: Map<number, number>): Array<[number, number, number]> {
  const out: Array<[number, number, number]> = [];
  for (const [k, v] of model) if (pages.get(k) !== v) out.push([k, v, pages.get(k)]);
  return out;
}

describe('DeltaPages', () => {
  test.each([32, 16] as const)('%i bits: agrees with a Map over values near and far, fractions, clears and the bases they move', (bits) => {
    for (let seed = 1; seed <= 10; seed++) {
      let x = seed;
      const next = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32;
      const pages = new DeltaPages(bits);
      const model = new Map<number, number>();
      // a clock that runs past the width's range in steps, so pages must take new bases as it goes
      let clock = bits === 32 ? 1_760_000_000_000 : 150;
      const step = bits === 32 ? 200_000 : 4;
      for (let i = 0; i < 60_000; i++) {
        const index = Math.floor(next() * 140_000);
        pages.ensure(index);
        const r = next();
        if (r < 0.1) {
          pages.clear(index);
          model.delete(index);
          continue;
        }
        clock += Math.floor(next() * step);
        const value = r < 0.8 ? clock : r < 0.85 ? clock + 0.5 : r < 0.9 ? -Math.floor(next() * 1e6) : r < 0.95 ? 2 ** 60 : Math.floor(next() * 2 ** 40);
        pages.set(index, value);
        model.set(index, value);
        if (i % 5000 === 0) expect(wrong(pages, model)).toEqual([]);
      }
      expect(wrong(pages, model)).toEqual([]);
    }
  });
});

describe('Float64Pages', () => {
  test('read and put serve a sparse use: 0 where nothing was put', () => {
    const pages = new Float64Pages();
    expect(pages.read(1_000_000)).toBe(0);
    pages.put(200_000, 1.5);
    expect(pages.read(200_000)).toBe(1.5);
    expect(pages.read(199_999)).toBe(0);
    expect(pages.read(5_000_000)).toBe(0);
  });
});

describe('SparseUint32Pages', () => {
  test('agrees with a Map, pages made and dropped as entries go from 0 and back', () => {
    let x = 7;
    const next = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32;
    const pages = new SparseUint32Pages();
    const model = new Map<number, number>();
    for (let i = 0; i < 60_000; i++) {
      const index = Math.floor(next() * 200_000);
      const value = next() < 0.5 ? 0 : Math.floor(next() * 2 ** 32);
      pages.set(index, value);
      if (value === 0) model.delete(index);
      else model.set(index, value);
    }
    const wrongs: number[] = [];
    for (let index = 0; index < 220_000; index++) if (pages.get(index) !== (model.get(index) ?? 0)) wrongs.push(index);
    expect(wrongs).toEqual([]);
    for (const index of model.keys()) pages.set(index, 0);
    for (let index = 0; index < 220_000; index += 997) expect(pages.get(index)).toBe(0);
  });
});
