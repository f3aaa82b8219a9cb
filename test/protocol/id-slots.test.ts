import { describe, expect, test } from 'vitest';
import { IdSlots } from '../../src/protocol/id-slots.js';

/** the same operations on IdSlots and on a Map: every answer must agree */
function check(ops: Array<{ add: boolean; key: number }>): void {
  const slots = new IdSlots();
  const model = new Map<string, number>();
  const inUse = new Set<number>();
  for (const { add, key } of ops) {
    const id = `id-${key}`;
    const found = slots.find(id);
    expect(found).toBe(model.get(id) ?? -1);
    if (add && found < 0) {
      const slot = slots.add(id);
      expect(slots.idAt(slot)).toBe(id);
      // a slot is never handed out twice at once
      expect(inUse.has(slot)).toBe(false);
      inUse.add(slot);
      model.set(id, slot);
    } else if (!add && found >= 0) {
      slots.remove(found);
      expect(slots.idAt(found)).toBeUndefined();
      inUse.delete(found);
      model.delete(id);
    }
    expect(slots.size).toBe(model.size);
  }
  for (const [id, slot] of model) expect(slots.find(id)).toBe(slot);
}

describe('IdSlots', () => {
  test('agrees with a Map over random adds and removals, through resizes under way', () => {
    for (let seed = 1; seed <= 20; seed++) {
      // a small LCG: the same sequences every run; 60% adds, so the live count passes several resizes
      let x = seed;
      const next = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32;
      const ops = Array.from({ length: 8000 }, () => ({ add: next() < 0.6, key: Math.floor(next() * 5000) }));
      check(ops);
    }
  });

  test('a million ids: each found at its slot while tables grow, freed slots used again first, all gone after removal', () => {
    const slots = new IdSlots();
    const n = 1_000_000;
    let misplaced = 0;
    for (let i = 0; i < n; i++) if (slots.add(`m-${i}`) !== i) misplaced++;
    expect(misplaced).toBe(0);
    for (let i = 0; i < n; i += 997) expect(slots.find(`m-${i}`)).toBe(i);
    expect(slots.find('m-1000000')).toBe(-1);
    for (let i = 0; i < n; i += 2) slots.remove(i);
    expect(slots.size).toBe(n / 2);
    for (let i = 1; i < n; i += 1000) expect(slots.find(`m-${i}`)).toBe(i);
    expect(slots.find('m-0')).toBe(-1);
    // the last freed slot comes back first; the count of slots made stays
    expect(slots.add('again')).toBe(n - 2);
    expect(slots.length).toBe(n);
    for (let i = 1; i < n; i += 2) slots.remove(i);
    slots.remove(n - 2);
    expect(slots.size).toBe(0);
    for (let i = 0; i < n; i += 4999) expect(slots.find(`m-${i}`)).toBe(-1);
  });
});
