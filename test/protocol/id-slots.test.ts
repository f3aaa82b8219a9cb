import { describe, expect, test } from 'vitest';
import { IdList, IdSlots } from '../../src/protocol/id-slots.js';

/** the same operations on IdSlots and on a Map: every answer must agree */
function check(ops: Array<{ add: boolean; key: number }>, slots = new IdSlots()): void {
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

  test('past the slot numbers that leave room for a tag in a table entry, the tables made after have none: every id still found', () => {
    for (let seed = 1; seed <= 5; seed++) {
      let x = seed;
      const next = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32;
      // slots reach 300 while a resize is under way and after; the rest as above
      const ops = Array.from({ length: 8000 }, () => ({ add: next() < 0.6, key: Math.floor(next() * 5000) }));
      check(ops, new IdSlots(300));
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

  test('ids of every shape come back as they went in: hex, UUIDs, short one-byte ids, and the rest', () => {
    const ids = [
      'f'.repeat(32),
      '0123456789abcdef0123456789abcdef',
      '0123456789abcdef0123456789abcdeF',
      '00',
      '0',
      '',
      'ab',
      'AB',
      '0123456789abcdef0123456789abcdef00',
      '123e4567-e89b-12d3-a456-426614174000',
      '123e4567-e89b-12d3-a456-42661417400g',
      '123E4567-E89B-12D3-A456-426614174000',
      'id-1',
      'id-1\u0000',
      'caf\u00e9',
      '\u00ff'.repeat(16),
      '\u00ff'.repeat(17),
      'message \u2603',
      'a much longer id than sixteen characters',
      // a code unit whose low byte is a hex digit ('0') is not one
      '0123456789abcdef0123456789abcde\u0130',
      '0123456789abcdef0123456789abcdeg',
    ];
    const slots = new IdSlots();
    const placed = ids.map((id) => slots.add(id));
    ids.forEach((id, i) => {
      expect(slots.idAt(placed[i]!)).toBe(id);
      expect(slots.find(id)).toBe(placed[i]);
      expect(slots.has(placed[i]!)).toBe(true);
      expect(slots.holdsId(placed[i]!, id)).toBe(true);
      expect(slots.holdsId(placed[i]!, ids[(i + 1) % ids.length]!)).toBe(false);
    });
    // a free slot taken by an id of another shape forgets the old one
    slots.remove(placed[9]!);
    expect(slots.has(placed[9]!)).toBe(false);
    expect(slots.holdsId(placed[9]!, ids[9]!)).toBe(false);
    expect(slots.idAt(placed[9]!)).toBeUndefined();
    expect(slots.add('short')).toBe(placed[9]);
    expect(slots.find(ids[9]!)).toBe(-1);
    expect(slots.idAt(placed[9]!)).toBe('short');
    slots.remove(placed[17]!);
    expect(slots.add('0123')).toBe(placed[17]);
    expect(slots.find(ids[17]!)).toBe(-1);
    expect(slots.idAt(placed[17]!)).toBe('0123');
  });

describe('IdList', () => {
  test('ids of every shape read back by index with their length, and a slice from an index on, past growth', () => {
    const shapes = (n: number) => [n.toString(16).padStart(32, '0'), `m-${n}`, `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`, `a long id of more than sixteen characters ${n}`, `\u2603${n}`];
    const list = new IdList();
    const model: string[] = [];
    for (let n = 0; n < 1000; n++) for (const id of shapes(n)) {
      list.push(id);
      model.push(id);
    }
    expect(list.length).toBe(model.length);
    model.forEach((id, i) => {
      expect(list.at(i)).toBe(id);
      expect(list.lengthAt(i)).toBe(id.length);
    });
    const tail = list.slice(1234);
    expect(tail.length).toBe(model.length - 1234);
    for (let i = 0; i < tail.length; i++) expect(tail.at(i)).toBe(model[i + 1234]);
    tail.push('after');
    expect(tail.at(tail.length - 1)).toBe('after');
    expect(list.length).toBe(model.length);
  });

  test('each id keeps its number; a slice and what is pushed onto it past many pages leave the list it came from readable as it was (a snapshot reads it meanwhile)', () => {
    const idOf = (i: number) => (i % 7 === 0 ? `other id ${i} of more than sixteen characters` : i.toString(16).padStart(32, '0'));
    const list = new IdList();
    const n = 200_000;
    for (let i = 0; i < n; i++) list.push(idOf(i), 1_000_000 + i);
    const tail = list.slice(150_000);
    for (let i = 0; i < n; i++) tail.push(`m-${i}`, -i);
    const wrong: number[] = [];
    for (let i = 0; i < n; i++) if (list.at(i) !== idOf(i) || list.numberAt(i) !== 1_000_000 + i) wrong.push(i);
    expect(wrong).toEqual([]);
    expect(list.length).toBe(n);
    expect(tail.length).toBe(n - 150_000 + n);
    expect([tail.at(0), tail.numberAt(0)]).toEqual([idOf(150_000), 1_150_000]);
    expect([tail.at(3), tail.numberAt(3)]).toEqual([idOf(150_003), 1_150_003]);
    expect([tail.at(49_998), tail.numberAt(49_998)]).toEqual([idOf(199_998), 1_199_998]);
    expect([tail.at(50_000 + 123_456), tail.numberAt(50_000 + 123_456), tail.lengthAt(50_000 + 123_456)]).toEqual(['m-123456', -123_456, 8]);
    // a slice of a slice, from inside a shared page
    const again = tail.slice(60_000);
    expect([again.at(0), again.numberAt(0)]).toEqual(['m-10000', -10_000]);
  });
});
});

describe('IdSlots with two holders', () => {
  test('a third owner is refused at claim: a slot has room for two holders (bits 1 and 2) beside its kind', () => {
    const slots = new IdSlots();
    slots.claim(1);
    slots.claim(2);
    expect(() => slots.claim(4)).toThrow(/not one of the bits 1 to 3/);
  });

  test('agrees with a Map of holders over random holds (hold, holdNew) and releases of ids of every shape, through resizes', () => {
    const shape = (k: number) => [k.toString(16).padStart(32, '0'), `m-${k}`, `00000000-0000-4000-8000-${k.toString(16).padStart(12, '0')}`, `a long id of more than sixteen characters ${k}`][k % 4]!;
    for (let seed = 1; seed <= 5; seed++) {
      let x = seed;
      const next = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32;
      const slots = new IdSlots();
      slots.claim(1);
      slots.claim(2);
      // id -> its slot and the bits holding it
      const model = new Map<string, { slot: number; holders: number }>();
      const used = new Set<number>();
      for (let op = 0; op < 20_000; op++) {
        const id = shape(Math.floor(next() * 3000));
        const holder = next() < 0.5 ? 1 : 2;
        const known = model.get(id);
        const found = slots.find(id);
        expect(found).toBe(known?.slot ?? -1);
        if (next() < 0.55) {
          // holdNew: as hold, but -1 for an id the holder holds already
          const asNew = next() < 0.5;
          const slot = asNew ? slots.holdNew(id, holder) : slots.hold(id, holder);
          if (asNew && known && (known.holders & holder) !== 0) {
            expect(slot).toBe(-1);
            continue;
          }
          if (known) expect(slot).toBe(known.slot);
          // a slot is never handed to two ids at once
          else expect(used.has(slot)).toBe(false);
          used.add(slot);
          model.set(id, { slot, holders: (known?.holders ?? 0) | holder });
        } else if (known && (known.holders & holder) !== 0) {
          slots.release(known.slot, holder);
          known.holders &= ~holder;
          if (known.holders === 0) {
            model.delete(id);
            used.delete(known.slot);
          }
        }
        expect(slots.size).toBe(model.size);
      }
      for (const [id, { slot, holders }] of model) {
        expect(slots.find(id)).toBe(slot);
        expect(slots.idAt(slot)).toBe(id);
        expect(slots.holds(slot, 1)).toBe((holders & 1) !== 0);
        expect(slots.holds(slot, 2)).toBe((holders & 2) !== 0);
      }
    }
  });
});
