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
