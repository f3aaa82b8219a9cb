import { describe, expect, test } from 'vitest';
import { EntryList } from '../../../src/broker/queue/entry-list.js';
import { type Entry, NO_RECORDS } from '../../../src/broker/queue/group.js';

function entry(n: number): Entry {
  const message = { seq: n, messageId: `m-${n}`, queue: 'q/v1', id: '*', data: { n }, created: 0, acceptedAt: 0, from: 'p' };
  return { message, records: NO_RECORDS, unassigned: false, pending: 0 };
}

describe('EntryList', () => {
  test('a drain in acceptance order with messages always held keeps no slot of those gone (each names its body)', () => {
    const members = new Set<Entry>();
    const list = new EntryList((e) => members.has(e));
    const window: Entry[] = [];
    let most = 0;
    for (let n = 0; n < 200_000; n++) {
      const e = entry(n);
      members.add(e);
      list.add(e);
      window.push(e);
      if (window.length > 50) {
        members.delete(window.shift()!);
        list.removed();
      }
      most = Math.max(most, list.slotCount);
    }
    expect(list.size).toBe(50);
    expect([...list].map((e) => e.message.seq)).toEqual(window.map((e) => e.message.seq));
    // about twice the members plus 1,024 at most: before the fix it kept all 200,000
    expect(most).toBeLessThanOrEqual(2 * 50 + 1025 + 1);
  });

  test('removals out of order: dead slots are reclaimed and the order of members stays', () => {
    const members = new Set<Entry>();
    const list = new EntryList((e) => members.has(e));
    const all = Array.from({ length: 10_000 }, (_, n) => entry(n));
    for (const e of all) {
      members.add(e);
      list.add(e);
    }
    // every odd one leaves, then every one but the last 10
    for (const e of all.filter((e) => e.message.seq % 2 === 1)) {
      members.delete(e);
      list.removed();
    }
    expect([...list].map((e) => e.message.seq)).toEqual(all.filter((e) => e.message.seq % 2 === 0).map((e) => e.message.seq));
    for (const e of all.filter((e) => e.message.seq % 2 === 0 && e.message.seq < 9_980)) {
      members.delete(e);
      list.removed();
    }
    expect(list.size).toBe(10);
    expect(list.slotCount).toBeLessThanOrEqual(2 * 10 + 1025);
    expect([...list].map((e) => e.message.seq)).toEqual([9980, 9982, 9984, 9986, 9988, 9990, 9992, 9994, 9996, 9998]);
  });
});
