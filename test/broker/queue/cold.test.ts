import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import type { Subscriber } from '../../../src/broker/queue/group.js';
import { Queue, type QueueSettings } from '../../../src/broker/queue/queue.js';
import { LogStore } from '../../../src/broker/store/log.js';
import type { StoredMessage } from '../../../src/broker/store/store.js';
import type { Delivery } from '../../../src/protocol/frames.js';
import { broker, connect } from '../../support/harness.js';

/**
 * Waiting messages past the queue's window are cold rows (src/broker/queue/cold.ts): everything a
 * user sees of them (order per group, acks heard on a slave, requeues, ttl, purge, listings,
 * overflow, a restart) is as for messages held as objects. A window of 5 and a real LogStore.
 */
const WINDOW = 5;
const base: QueueSettings = { prefetch: 100, ttlMs: null, maxItems: 1_000_000, overflow: 'drop-oldest', requeueLimit: 5, requeueIntervalMs: 100_000, deadLetter: null };

const dirs: string[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function newDir(): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'whisker-cold-')), 'store');
  dirs.push(dir);
  return dir;
}

async function open(dir: string, settings: Partial<QueueSettings> = {}, delivering = true) {
  const store = new LogStore(dir);
  const forgotten: string[] = [];
  const queue = new Queue('q/v1', { ...base, ...settings }, { now: () => Date.now(), store, discard: () => undefined, bodyWindow: WINDOW, forgotten: (id) => void forgotten.push(id) });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    queue.close();
    await store.close();
  };
  cleanups.push(close);
  for (const recovered of (await store.load()).messages) queue.restore(recovered);
  queue.finishRestore();
  queue.setDelivering(delivering);
  return { queue, store, forgotten, close };
}

let seq = 0;
/** sends `count` messages (`id(i)` for the i-th), answers their numbers (the queue drops bodies it keeps cold) */
async function send(queue: Queue, store: LogStore, count: number, id = (i: number) => String(i % 2)): Promise<number[]> {
  const messages: StoredMessage[] = [];
  for (let i = 0; i < count; i++) {
    const n = seq++;
    messages.push({ seq: n + 1, messageId: `m-${n}`, queue: 'q/v1', id: id(i), data: { n }, created: n, acceptedAt: Date.now(), from: 'producer' });
  }
  await store.append(messages);
  for (const m of messages) queue.accept(m);
  return messages.map((m) => m.created);
}

function subscriber(clientName: string, mode: 'consume' | 'listen', prefetch: number, got: Delivery[]): Subscriber {
  return { clientName, mode, prefetch, isWritable: () => true, deliver: (d) => void got.push(d) };
}

const ns = (got: Delivery[]) => got.map((d) => (d.data as { n: number }).n);

async function until(predicate: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const start = Date.now();
  while (!predicate()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('cold rows (messages past the window)', () => {
  test('fan-out: a fast and a stalled group each get every message once, in order, across the cold rows', async () => {
    const { queue, store } = await open(newDir());
    const fast: Delivery[] = [];
    const slow: Delivery[] = [];
    const a = subscriber('a', 'consume', 3, fast);
    // the listener's connection cannot take anything until the consumer has everything
    let writable = false;
    const b: Subscriber = { ...subscriber('b', 'listen', Infinity, slow), isWritable: () => writable };
    queue.subscribe(a, '*');
    queue.subscribe(b, '*');
    const sent = await send(queue, store, 60);
    expect(queue.depth).toBe(60);
    expect(queue.coldSize).toBeGreaterThan(40);
    await until(() => {
      for (const d of fast.slice(-3)) queue.ack(a, d.messageId, '*', true, 0);
      return fast.length === 60;
    }, 'the consumer to get all 60');
    expect(slow).toHaveLength(0);
    expect(queue.depth).toBe(60); // every one still waits for the listener
    writable = true;
    queue.resume(b);
    await until(() => slow.length === 60, 'the listener to get all 60');
    expect(ns(fast)).toEqual(sent);
    expect(ns(slow)).toEqual(ns(fast));
  });

  test('a cold row\'s body comes back as the JSON text it was stored from: the frame takes it as it is, `data` is parsed when read', async () => {
    const { queue, store } = await open(newDir());
    const got: Array<{ d: Delivery; json: string | undefined }> = [];
    const a: Subscriber = { clientName: 'a', mode: 'consume', prefetch: 100, isWritable: () => true, deliver: (d, json) => void got.push({ d, json }) };
    const sent = await send(queue, store, 30);
    expect(queue.coldSize).toBe(30 - WINDOW);
    queue.subscribe(a, '*');
    await until(() => got.length === 30, 'all 30');
    // those read back have their body's text for the frame (the first WINDOW kept what they came with: none here)
    expect(got.slice(WINDOW).map((g) => g.json)).toEqual(sent.slice(WINDOW).map((n) => JSON.stringify({ n })));
    expect(got.map((g) => (g.d.data as { n: number }).n)).toEqual(sent);
  });

  test('a slave answers acks, settlements and forgets heard for cold rows; a nack there is a requeue; promoted, it delivers the rest once', async () => {
    const dir = newDir();
    const { queue, store } = await open(dir, {}, false);
    const got: Delivery[] = [];
    const consumer = subscriber('c', 'consume', 100, got);
    queue.subscribe(consumer, '*');
    const sent = await send(queue, store, 40);
    const id = (i: number) => `m-${sent[i]}`;
    expect(queue.size).toBe(40);
    expect(queue.coldSize).toBe(35);
    // heard while a slave: the master delivered these and they were answered (messages 30..39 are cold)
    queue.ack(consumer, id(35), '*', true, 0); // acked by the client
    queue.settleFromPeer(id(36), 'c|*'); // the master settled it
    queue.forgetFromPeer(id(37)); // the master is done with it
    queue.ack(consumer, id(38), '*', false, 0); // nacked: requeued
    expect(queue.has(id(35))).toBe(false);
    expect(queue.has(id(36))).toBe(false);
    expect(queue.has(id(37))).toBe(false);
    expect(queue.size).toBe(37);
    queue.setDelivering(true);
    await until(() => got.length === 37, '37 deliveries');
    const n = ns(got);
    expect(new Set(n).size).toBe(37);
    expect(n).not.toContain(sent[35]);
    expect(n).not.toContain(sent[36]);
    expect(n).not.toContain(sent[37]);
    expect(got.find((d) => d.messageId === id(38))?.nbRequeues).toBe(1);
    // order holds for first deliveries
    const firsts = got.filter((d) => d.nbRequeues === 0).map((d) => (d.data as { n: number }).n);
    expect(firsts).toEqual([...firsts].sort((x, y) => x - y));
  });

  test('a restart keeps cold rows in their groups and order; one acked before the restart does not come back', async () => {
    const dir = newDir();
    const first = await open(dir);
    const got: Delivery[] = [];
    const c = subscriber('c', 'consume', 1, got);
    first.queue.subscribe(c, '1');
    const sent = await send(first.queue, first.store, 30, () => '1');
    await until(() => got.length === 1, 'one delivery');
    first.queue.ack(c, got[0]!.messageId, '1', true, 0);
    await until(() => got.length === 2, 'a second delivery');
    first.queue.unsubscribe(c, '1');
    await new Promise((resolve) => setTimeout(resolve, 20));
    await first.close();

    const second = await open(dir);
    expect(second.queue.size).toBe(29);
    expect(second.queue.coldSize).toBe(29 - WINDOW);
    const again: Delivery[] = [];
    second.queue.subscribe(subscriber('c', 'consume', 100, again), '1');
    await until(() => again.length === 29, 'the 29 left');
    expect(ns(again)).toEqual(sent.slice(1));
  });

  test('ttl expires cold rows too; purge, remove, listings and counts see them', async () => {
    const dir = newDir();
    const { queue, store, forgotten } = await open(dir, { ttlMs: 150 });
    const sent = await send(queue, store, 20, (i) => (i < 10 ? 'a' : 'b'));
    expect(queue.idCounts()).toEqual(new Map([['a', 10], ['b', 10]]));
    expect(queue.coldSize).toBe(20 - WINDOW);
    const listed = queue.messages();
    expect(listed.map((m) => m.messageId)).toEqual(sent.map((n) => `m-${n}`));
    expect(listed.every((m) => m.waitingForSubscriber)).toBe(true);
    expect(queue.messages('b', 3)).toHaveLength(3);
    expect(queue.oldestWaitingAcceptedAt()).not.toBeNull();
    expect(queue.remove(`m-${sent[19]}`)).toBe(true);
    expect(queue.purge('b')).toBe(9);
    expect(queue.size).toBe(10);
    await until(() => queue.size === 0, 'ttl to expire the rest');
    expect(queue.counters.expired).toBe(10);
    expect(queue.oldestWaitingAcceptedAt()).toBeNull();
    expect(forgotten).toHaveLength(20);
  });

  test('cold rows purged while their bodies are being read back: the read ends quietly, nothing delivered twice or lost from what is left', async () => {
    const { queue, store } = await open(newDir());
    // the first WINDOW bodies in memory ('a'), the rest cold ('b': a shape of their own, gone once they are)
    await send(queue, store, 20, (i) => (i < WINDOW ? 'a' : 'b'));
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => void rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      const got: Delivery[] = [];
      queue.subscribe(subscriber('c', 'consume', 100, got), '*');
      // the five in memory went out; the cold ones' bodies are being read: purge them meanwhile
      expect(got).toHaveLength(WINDOW);
      expect(queue.purge('b')).toBe(20 - WINDOW);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(rejections).toEqual([]);
      expect(got).toHaveLength(WINDOW);
      expect(queue.size).toBe(WINDOW);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });

  test('drop-oldest past maxItems drops the oldest waiting, cold rows included; the newest are delivered in order', async () => {
    const { queue, store } = await open(newDir(), { maxItems: 12 });
    const sent = await send(queue, store, 30, () => 'x');
    expect(queue.depth).toBe(12);
    expect(queue.counters.dropped).toBe(18);
    // the first bodies kept in memory were the oldest, dropped first: later ones took the room
    expect(queue.bodiesInMemory).toBeLessThanOrEqual(WINDOW);
    expect(queue.coldSize).toBe(12 - queue.bodiesInMemory);
    const got: Delivery[] = [];
    queue.subscribe(subscriber('c', 'consume', 100, got), 'x');
    await until(() => got.length === 12, '12 deliveries');
    expect(ns(got)).toEqual(sent.slice(18));
  });

  test('a new group adopts waiting cold rows; a message sent during the adoption comes after them', async () => {
    const { queue, store } = await open(newDir());
    const sent = await send(queue, store, 3_000, () => 'k');
    expect(queue.coldSize).toBe(3_000 - WINDOW);
    const got: Delivery[] = [];
    queue.subscribe(subscriber('c', 'consume', Infinity, got), 'k');
    const late = await send(queue, store, 1, () => 'k');
    await until(() => got.length === 3_001, 'all delivered');
    expect(ns(got)).toEqual([...sent, ...late]);
  });

  test('a real broker: what `whisker tail` sees (the router\'s taps) has every body, cold rows or not', async () => {
    const b = await broker({ memoryWindow: 2, maxItemsInQueue: 1000 });
    const seen: unknown[] = [];
    b.router.tap((m) => void seen.push(m.data));
    const producer = await connect('producer', b.hostSpec);
    for (let i = 0; i < 10; i++) await producer.send('tail/v1/a', { i });
    expect(b.router.queues.get('tail/v1')!.coldSize).toBe(8);
    expect(seen).toEqual(Array.from({ length: 10 }, (_, i) => ({ i })));
  });
});
