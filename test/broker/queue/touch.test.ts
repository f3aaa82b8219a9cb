import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { Queue, type QueueSettings } from '../../../src/broker/queue/queue.js';
import type { Subscriber } from '../../../src/broker/queue/group.js';
import type { Delivery } from '../../../src/protocol/frames.js';
import { MemoryStore } from '../../../src/broker/store/memory.js';
import type { StoredMessage } from '../../../src/broker/store/store.js';

/** issue #29 item 12: who may touch a delivery, and what a touch moves (fake clock, STYLE habit 6). */
const settings: QueueSettings = { prefetch: 1, ttlMs: null, maxItems: 1000, overflow: 'drop-oldest', requeueLimit: 5, requeueIntervalMs: 1000, deadLetter: null, maxTouchMs: 3000 };

function consumer(): Subscriber & { got: Delivery[] } {
  const got: Delivery[] = [];
  return { clientName: 'w', mode: 'consume', prefetch: 1, isWritable: () => true, deliver: (d) => void got.push(d), got };
}

let seq = 0;
function message(id: string): StoredMessage {
  seq++;
  return { seq, messageId: `m${seq}`, queue: 'q/v1', id, data: seq, created: Date.now(), acceptedAt: Date.now(), from: 'p' };
}

beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

describe('Queue.touch', () => {
  test('only the subscriber the delivery went to moves its deadline; another one of the group does not', () => {
    const queue = new Queue('q/v1', settings, { now: () => Date.now(), store: new MemoryStore(), discard: () => {} });
    queue.setDelivering(true);
    const [a, b] = [consumer(), consumer()];
    queue.subscribe(a, '*');
    queue.subscribe(b, '*');
    const m = message('1');
    queue.accept(m);
    expect(a.got).toHaveLength(1);
    vi.advanceTimersByTime(800);
    queue.touch(b, m.messageId, '*'); // not its delivery: ignored
    vi.advanceTimersByTime(200);
    expect(b.got.map((d) => d.nbRequeues)).toEqual([1]); // timed out at 1 s: redelivered (to b, a is full)
  });

  test('a touch restarts requeueInterval; in-flight order stays right for the others; past maxTouch it is ignored', () => {
    const queue = new Queue('q/v1', settings, { now: () => Date.now(), store: new MemoryStore(), discard: () => {} });
    queue.setDelivering(true);
    const [a, b] = [consumer(), consumer()];
    queue.subscribe(a, '1');
    queue.subscribe(b, '2');
    const [m1, m2] = [message('1'), message('2')];
    queue.accept(m1);
    vi.advanceTimersByTime(100);
    queue.accept(m2);
    vi.advanceTimersByTime(700);
    queue.touch(a, m1.messageId, '1'); // deadline 1.8 s
    vi.advanceTimersByTime(300); // 1.1 s: m2 (delivered at 0.1 s) times out, m1 does not
    expect(b.got.map((d) => d.nbRequeues)).toEqual([0, 1]);
    expect(a.got).toHaveLength(1);
    // accepted up to 2.0 s (2.0 + 1 = 3 s), refused after: past maxTouch
    for (let t = 1100; t < 3500; t += 100) {
      vi.advanceTimersByTime(100);
      queue.touch(a, m1.messageId, '1');
    }
    expect(a.got.map((d) => d.nbRequeues)).toEqual([0, 1]); // held 3 s at most, then redelivered
  });

  test('a slave (not delivering) ignores touches', () => {
    const queue = new Queue('q/v1', settings, { now: () => Date.now(), store: new MemoryStore(), discard: () => {} });
    const a = consumer();
    queue.subscribe(a, '1');
    const m = message('1');
    queue.accept(m);
    expect(() => queue.touch(a, m.messageId, '1')).not.toThrow();
    expect(a.got).toHaveLength(0);
  });
});
