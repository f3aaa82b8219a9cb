import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { Queue, type QueueSettings } from '../../../src/broker/queue/queue.js';
import type { Subscriber } from '../../../src/broker/queue/group.js';
import type { Delivery } from '../../../src/protocol/frames.js';
import { MemoryStore } from '../../../src/broker/store/memory.js';
import type { StoredMessage, StoreEvent } from '../../../src/broker/store/store.js';

/** The queue is pure logic with one timer: unit tests on a fake clock (STYLE habit 6). */
const settings: QueueSettings = { prefetch: 1, ttlMs: null, maxItems: 1000, overflow: 'drop-oldest', requeueLimit: 5, requeueIntervalMs: 1000, deadLetter: null };

class RecordingStore extends MemoryStore {
  readonly events: StoreEvent[] = [];
  override record(events: readonly StoreEvent[]): void {
    this.events.push(...events);
  }
}

function subscriber(name: string, mode: 'listen' | 'consume', prefetch = 1): Subscriber & { got: Delivery[] } {
  const got: Delivery[] = [];
  return { clientName: name, mode, prefetch: mode === 'listen' ? Infinity : prefetch, isWritable: () => true, deliver: (d) => void got.push(d), got };
}

let seq = 0;
function message(id: string, data: unknown): StoredMessage {
  seq++;
  return { seq, messageId: `m${seq}`, queue: 'q/v1', id, data, created: Date.now(), acceptedAt: Date.now(), from: 'p' };
}

function makeQueue(overrides: Partial<QueueSettings> = {}, store = new RecordingStore()) {
  const dead: string[] = [];
  const queue = new Queue('q/v1', { ...settings, ...overrides }, { now: () => Date.now(), store, discard: (target, m) => void dead.push(`${target}:${m.messageId}`) });
  return { queue, store, dead };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('Queue', () => {
  test('a redelivery goes back to its place: it overtakes nothing it was behind', () => {
    const { queue } = makeQueue();
    queue.setDelivering(true);
    const c = subscriber('c', 'consume', 1);
    queue.subscribe(c, '1');
    const [a, b2, c3] = [message('1', 'a'), message('1', 'b'), message('1', 'c')];
    for (const m of [a, b2, c3]) queue.accept(m);
    expect(c.got.map((d) => d.data)).toEqual(['a']);
    queue.ack(c, a.messageId, '1', false, 0);
    expect(c.got.map((d) => d.data)).toEqual(['a', 'a']);
    queue.ack(c, a.messageId, '1', true, 0);
    queue.ack(c, b2.messageId, '1', true, 0);
    expect(c.got.map((d) => d.data)).toEqual(['a', 'a', 'b', 'c']);
  });

  test('an ack timeout redelivers with nbRequeues + 1, driven by one timer', () => {
    const { queue } = makeQueue({ requeueIntervalMs: 500 });
    queue.setDelivering(true);
    const c = subscriber('c', 'consume');
    queue.subscribe(c, '*');
    queue.accept(message('9', 'x'));
    vi.advanceTimersByTime(499);
    expect(c.got).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(c.got.map((d) => d.nbRequeues)).toEqual([0, 1]);
    expect(queue.counters.timedOut).toBe(1);
  });

  test('a reload that shortens requeueInterval applies to deliveries already in flight', () => {
    const { queue } = makeQueue({ requeueIntervalMs: 10_000 });
    queue.setDelivering(true);
    const c = subscriber('c', 'consume', 2);
    queue.subscribe(c, '*');
    queue.accept(message('1', 'first'));
    queue.updateSettings({ ...settings, requeueIntervalMs: 1000 });
    queue.accept(message('2', 'second'));
    // before: the first one's 10 s deadline held back the timeout of the second, due at 1 s
    vi.advanceTimersByTime(1001);
    expect(c.got.map((d) => [d.data, d.nbRequeues])).toEqual([['first', 0], ['second', 0], ['first', 1], ['second', 1]]);
  });

  test('a delayed requeue does not block the next message', () => {
    const { queue } = makeQueue();
    queue.setDelivering(true);
    const c = subscriber('c', 'consume');
    queue.subscribe(c, '1');
    const first = message('1', 'first');
    queue.accept(first);
    queue.accept(message('1', 'second'));
    queue.ack(c, first.messageId, '1', false, 10);
    expect(c.got.map((d) => d.data)).toEqual(['first', 'second']);
    queue.ack(c, c.got[1]!.messageId, '1', true, 0);
    vi.advanceTimersByTime(9_999);
    expect(c.got).toHaveLength(2);
    vi.advanceTimersByTime(1);
    expect(c.got.map((d) => d.data)).toEqual(['first', 'second', 'first']);
  });

  test('a slave delivers nothing, applies mirrored acks, and delivers the rest once promoted', () => {
    const { queue, store } = makeQueue();
    const c = subscriber('c', 'consume', 10);
    queue.subscribe(c, '1');
    const [m1, m2, m3] = [message('1', 1), message('1', 2), message('1', 3)];
    for (const m of [m1, m2, m3]) queue.accept(m);
    expect(c.got).toHaveLength(0);
    queue.ack(c, m1.messageId, '1', true, 0); // the master delivered m1 and the client acked it everywhere
    expect(store.events).toContainEqual({ kind: 'remove', messageId: m1.messageId });
    queue.setDelivering(true);
    expect(c.got.map((d) => d.data)).toEqual([2, 3]);
  });

  test('on the master, an ack counts only from the subscriber the message was delivered to', () => {
    const { queue } = makeQueue();
    queue.setDelivering(true);
    const alice = subscriber('alice', 'consume');
    const mallory = subscriber('mallory', 'consume');
    queue.subscribe(alice, '1');
    queue.subscribe(mallory, '1');
    const m = message('1', 'secret');
    queue.accept(m);
    queue.ack(mallory, m.messageId, '1', true, 0);
    expect(queue.size).toBe(1);
    queue.ack(alice, m.messageId, '1', true, 0);
    expect(queue.size).toBe(0);
  });

  test('restore gives back records per group and waiting messages', () => {
    const { queue } = makeQueue();
    const waiting = message('5', 'waits');
    const assigned = message('1', 'assigned');
    queue.restore({ message: waiting, records: [] });
    queue.restore({ message: assigned, records: [{ group: 'c|1', nbRequeues: 2, notBefore: 0 }] });
    queue.setDelivering(true);
    const c = subscriber('c', 'consume', 10);
    queue.subscribe(c, '1');
    expect(c.got.map((d) => [d.data, d.nbRequeues])).toEqual([['assigned', 2]]);
    const star = subscriber('s', 'listen');
    queue.subscribe(star, '*');
    expect(star.got.map((d) => d.data)).toEqual(['waits']);
  });

  test('a restored message whose assign record was lost in a crash joins the groups restored with it', () => {
    // accepted while consumer group c|1 existed; the crash came before its assign record
    const { queue, store } = makeQueue();
    const earlier = message('1', 'earlier');
    const orphan = message('1', 'orphan');
    queue.restore({ message: earlier, records: [{ group: 'c|1', nbRequeues: 0, notBefore: 0 }] });
    queue.restore({ message: orphan, records: [] });
    queue.finishRestore();
    expect(store.events).toEqual([{ kind: 'assign', messageId: orphan.messageId, groups: ['c|1'] }]);
    queue.setDelivering(true);
    const c = subscriber('c', 'consume', 10);
    queue.subscribe(c, '1'); // the group exists already: before the fix nothing adopted the orphan
    expect(c.got.map((d) => d.data)).toEqual(['earlier', 'orphan']);
  });

  test('past requeueLimit a message is handed to the dead-letter channel', () => {
    const { queue, dead } = makeQueue({ requeueLimit: 2, deadLetter: 'dlq/v1/all' });
    queue.setDelivering(true);
    const c = subscriber('c', 'consume');
    queue.subscribe(c, '1');
    const m = message('1', 'poison');
    queue.accept(m);
    queue.ack(c, m.messageId, '1', false, 0);
    queue.ack(c, m.messageId, '1', false, 0);
    expect(c.got).toHaveLength(2);
    expect(dead).toEqual([`dlq/v1/all:${m.messageId}`]);
    expect(queue.size).toBe(0);
  });
});

describe('a group cursor over rows of other ids', () => {
  test('a consumer of one id behind 100,000 waiting messages of another gets its own, in order, over a few turns; the others stay', async () => {
    const { queue } = makeQueue({ maxItems: 200_000 });
    queue.setDelivering(true);
    const b = subscriber('b', 'consume', 1);
    queue.subscribe(b, 'b');
    for (let i = 0; i < 100_000; i++) queue.accept(message('b', i));
    const a = subscriber('a', 'consume', 10);
    queue.subscribe(a, 'a');
    const mine = [message('a', 'first'), message('a', 'second')];
    for (const m of mine) queue.accept(m);
    // the cursor looks at a bounded number of rows per turn (group.ts, SCAN_BUDGET), then goes on
    for (let turn = 0; turn < 10 && a.got.length < 2; turn++) await vi.advanceTimersByTimeAsync(1);
    expect(a.got.map((d) => d.data)).toEqual(['first', 'second']);
    expect(b.got).toHaveLength(1);
    expect(queue.depth).toBe(100_000 - 1);
  });
});
