import { describe, expect, test } from 'vitest';
import { LiveIndex, type RecordPlace } from '../../../src/broker/store/log-index.js';
import type { StoredMessage } from '../../../src/broker/store/store.js';

/**
 * A compaction's capture of the store's index (log-index.ts) is the state between two commits,
 * unchanged afterwards: the snapshot written from it over many turns sees every slot as it was,
 * whatever the commits meanwhile did to it (removed, taken by another message, records changed).
 */
const place = (offset: number): RecordPlace => ({ segment: 3, offset, replayed: false, inSnapshot: false });
const message = (n: number): StoredMessage => ({ seq: n, messageId: n.toString(16).padStart(32, '0'), queue: 'q/v1', id: '*', data: { n }, created: n, acceptedAt: Date.now(), from: 'p' });

describe('LiveIndex capture', () => {
  test('slots removed, taken again and changed after the capture read as they were when captured', () => {
    const index = new LiveIndex(60_000, Date.now);
    const n = 5_000;
    for (let i = 0; i < n; i++) index.apply({ k: 'm', m: message(i) }, 100 + (i % 50), place(i * 1000));
    index.recovered();
    for (let i = 0; i < n; i += 2) index.apply({ k: 'a', id: message(i).messageId, g: ['c|*'] }, 0, place(0));
    const capture = index.capture();
    const before = Array.from({ length: n }, (_, slot) => capture.entry(slot));
    // after it: every third removed, new messages take the freed slots, requeues on the rest
    for (let i = 0; i < n; i += 3) index.apply({ k: 'x', id: message(i).messageId }, 0, place(0));
    for (let i = n; i < n + n / 3; i++) index.apply({ k: 'm', m: message(i) }, 77, place(i * 1000));
    for (let i = 1; i < n; i += 3) index.apply({ k: 'r', id: message(i).messageId, g: 'c|*', n: 2, nb: 0 }, 0, place(0));
    const wrong: number[] = [];
    for (let slot = 0; slot < n; slot++) if (JSON.stringify(capture.entry(slot)) !== JSON.stringify(before[slot])) wrong.push(slot);
    expect(wrong).toEqual([]);
    expect(capture.entry(n + 10)).toBeUndefined();
    index.release(capture);
  });
});

describe('LiveIndex capture, what one change costs', () => {
  test('a slot changed after the capture makes room for itself, not for every slot below it', () => {
    // a drain's first change after a compaction's capture came at slot 837,400 of 1,010,000: the
    // capture's column of saved slots was dense, and made the 52 pages below it in that one turn
    // (bench/waiting-heap.mjs 1000000, 13-23 ms). Bytes, not time: one page of 64 KB for the
    // slot saved, where the dense column made 13 of 128 KB for a slot near 200,000.
    const index = new LiveIndex(60_000, Date.now);
    const n = 200_000;
    for (let i = 0; i < n; i++) index.apply({ k: 'm', m: message(i) }, 100, place(i * 1000));
    index.recovered();
    const capture = index.capture();
    const before = process.memoryUsage().arrayBuffers;
    index.apply({ k: 'x', id: message(n - 1).messageId }, 0, place(0));
    const made = process.memoryUsage().arrayBuffers - before;
    expect(made).toBeLessThan(256 * 1024);
    expect(capture.entry(n - 1)?.messageId).toBe(message(n - 1).messageId);
    expect(index.get(message(n - 1).messageId)).toBeUndefined();
    index.release(capture);
  });
});

describe('LiveIndex record lists', () => {
  test('lists of several groups under way (kept by reference up to a bound, interned past it) read back as applied, through a capture too, and go with their settlements', () => {
    const index = new LiveIndex(60_000, Date.now);
    const n = 70_000; // past the 65,536 lists kept by reference
    const groups = ['l|a|*', 'l|b|*', 'c|c|*'];
    for (let i = 0; i < n; i++) {
      const id = message(i).messageId;
      index.apply({ k: 'm', m: message(i) }, 100, place(i * 1000));
      index.apply({ k: 'a', id, g: groups }, 0, place(0));
      index.apply({ k: 'r', id, g: groups[i % 3]!, n: 1 + (i % 2), nb: 0 }, 0, place(0));
    }
    index.recovered();
    const expected = (i: number) => groups.map((g, k) => [g, k === i % 3 ? 1 + (i % 2) : 0, 0]);
    for (const i of [0, 1, 2, 65_535, 65_536, 65_537, n - 1]) expect(index.get(message(i).messageId)?.records).toEqual(expected(i));
    const capture = index.capture();
    // every message's first group settles; the lists change after the capture, which keeps them
    for (let i = 0; i < n; i++) index.apply({ k: 's', id: message(i).messageId, g: groups[0]!, o: 'acked' }, 0, place(0));
    for (const i of [0, 1, 65_536, n - 1]) {
      expect(capture.entry(i)?.records).toEqual(expected(i));
      expect(index.get(message(i).messageId)?.records).toEqual(expected(i).slice(1));
    }
    index.release(capture);
    for (let i = 0; i < n; i++) for (const g of groups.slice(1)) index.apply({ k: 's', id: message(i).messageId, g, o: 'acked' }, 0, place(0));
    for (const i of [0, 65_536, n - 1]) expect(index.get(message(i).messageId)?.records).toEqual([]);
  });
});
