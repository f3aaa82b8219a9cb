import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterEach, describe, expect, test } from 'vitest';
import type { Subscriber } from '../../../src/broker/queue/group.js';
import { Queue, type QueueSettings } from '../../../src/broker/queue/queue.js';
import { LogStore } from '../../../src/broker/store/log.js';
import { MemoryStore } from '../../../src/broker/store/memory.js';
import type { StoredMessage, StoreEvent } from '../../../src/broker/store/store.js';
import type { Delivery } from '../../../src/protocol/frames.js';

/**
 * Bounded memory (issue 5): a queue with a large backlog keeps only a window of bodies in
 * memory, reads the rest back from the durable log as delivery nears, in order per id, and
 * does the same after a restart. Measured through `bodiesInMemory`, not through RSS.
 */
const settings: QueueSettings = { prefetch: 100, ttlMs: null, maxItems: 1_000_000, overflow: 'drop-oldest', requeueLimit: 5, requeueIntervalMs: 100_000, deadLetter: null };
const TOTAL = 200_000;
const IDS = 4;

const dirs: string[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function openQueue(dir: string): Promise<{ queue: Queue; store: LogStore }> {
  const store = new LogStore(dir);
  const queue = new Queue('q/v1', settings, { now: () => Date.now(), store, discard: () => undefined });
  cleanups.push(async () => {
    queue.close();
    await store.close();
  });
  for (const recovered of (await store.load()).messages) queue.restore(recovered);
  queue.setDelivering(true);
  return { queue, store };
}

/** a consumer of every id that acks each delivery on a later turn, and checks what it gets */
function consumer(queue: Queue, onDelivery: () => void) {
  const seen = new Array<Set<number>>(IDS).fill(new Set()).map(() => new Set<number>());
  const last = new Array<number>(IDS).fill(-1);
  const problems: string[] = [];
  const sub: Subscriber = {
    clientName: 'worker',
    mode: 'consume',
    prefetch: 100,
    isWritable: () => true,
    deliver: (d: Delivery) => {
      const { k, n } = d.data as { k: number; n: number };
      if (d.channel !== `q/v1/${k}` || n % IDS !== k) problems.push(`${d.messageId} came with the body of ${n} on ${d.channel}`);
      if (!seen[k]!.has(n)) {
        if (n <= last[k]!) problems.push(`id ${k}: ${n} after ${last[k]}`);
        last[k] = n;
        seen[k]!.add(n);
      }
      onDelivery();
      setImmediate(() => queue.ack(sub, d.messageId, '*', true, 0));
    },
  };
  const received = () => seen.reduce((sum, s) => sum + s.size, 0);
  return { sub, seen, problems, received };
}

async function until(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const start = Date.now();
  while (!predicate()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('Queue with a large backlog on the durable store', () => {
  test('200,000 waiting messages: a window of bodies in memory, all delivered in order per id from disk, also across a restart', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'whisker-backlog-')), 'store');
    dirs.push(dir);
    let { queue, store } = await openQueue(dir);
    let seq = 0;
    for (let batch = 0; batch < TOTAL / 1000; batch++) {
      const messages: StoredMessage[] = [];
      for (let i = 0; i < 1000; i++) {
        const n = seq;
        messages.push({ seq: ++seq, messageId: `m-${n}`, queue: 'q/v1', id: String(n % IDS), data: { k: n % IDS, n, pad: 'x'.repeat(60) }, created: Date.now(), acceptedAt: Date.now(), from: 'producer' });
      }
      await store.append(messages);
      for (const m of messages) queue.accept(m);
    }
    expect(queue.depth).toBe(TOTAL);
    const waitingBodies = queue.bodiesInMemory;
    expect(waitingBodies).toBeLessThan(TOTAL / 10);

    // drain a third, stop deliveries, restart on the same directory
    let most = 0;
    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    const first = consumer(queue, () => (most = Math.max(most, queue.bodiesInMemory)));
    queue.subscribe(first.sub, '*');
    await until(() => first.received() >= TOTAL / 3, 60_000, 'a third delivered');
    queue.unsubscribe(first.sub, '*');
    loop.disable();
    const firstPauseMs = loop.max / 1e6;
    await new Promise((resolve) => setImmediate(resolve));
    queue.close();
    await store.close();
    ({ queue, store } = await openQueue(dir));
    const restoredBodies = queue.bodiesInMemory;
    expect(queue.size).toBeGreaterThan(TOTAL / 2);
    expect(restoredBodies).toBeLessThan(TOTAL / 5);

    const second = consumer(queue, () => (most = Math.max(most, queue.bodiesInMemory)));
    loop.reset();
    loop.enable();
    queue.subscribe(second.sub, '*');
    await until(() => queue.size === 0, 60_000, 'the backlog drained');
    loop.disable();
    console.log(`backlog of ${TOTAL}: ${waitingBodies} bodies in memory while waiting, ${restoredBodies} after the restart, at most ${most} while draining; event loop longest pause while draining ${firstPauseMs.toFixed(1)} ms before the restart, ${(loop.max / 1e6).toFixed(1)} ms after (p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms)`);

    expect([...first.problems, ...second.problems]).toEqual([]);
    expect(most).toBeLessThan(TOTAL / 5);
    // every message delivered, each id in order (the restart's redeliveries aside)
    for (let k = 0; k < IDS; k++) {
      const all = new Set([...first.seen[k]!, ...second.seen[k]!]);
      expect(all.size).toBe(TOTAL / IDS);
    }
    const resumedAt = first.seen.map((s) => Math.max(...s));
    second.seen.forEach((s, k) => {
      const fresh = [...s].filter((n) => !first.seen[k]!.has(n));
      expect(Math.min(...fresh)).toBeGreaterThan(resumedAt[k]!);
    });
  }, 120_000);
});

describe('a new subscriber on a large backlog of waiting messages', () => {
  test('adopts them a slice per event-loop turn, and a message sent meanwhile still comes after the older ones of its id', async () => {
    const events: StoreEvent[] = [];
    const store = new (class extends MemoryStore {
      override record(batch: readonly StoreEvent[]): void {
        events.push(...batch);
      }
    })();
    const queue = new Queue('q/v1', settings, { now: () => Date.now(), store, discard: () => undefined });
    cleanups.push(async () => queue.close());
    queue.setDelivering(true);
    const message = (n: number): StoredMessage => ({ seq: n + 1, messageId: `m-${n}`, queue: 'q/v1', id: '1', data: { n }, created: 0, acceptedAt: Date.now(), from: 'p' });
    const WAITING = 50_000;
    for (let n = 0; n < WAITING; n++) queue.accept(message(n));
    const got: number[] = [];
    const sub: Subscriber = { clientName: 'w', mode: 'consume', prefetch: Infinity, isWritable: () => true, deliver: (d) => void got.push((d.data as { n: number }).n) };
    queue.subscribe(sub, '1');
    const adoptedAtOnce = events.filter((e) => e.kind === 'assign').length;
    expect(adoptedAtOnce).toBeGreaterThan(0);
    expect(adoptedAtOnce).toBeLessThan(WAITING / 5);
    queue.accept(message(WAITING));
    await until(() => got.length === WAITING + 1, 10_000, 'the backlog adopted and delivered');
    expect(got).toEqual(Array.from({ length: WAITING + 1 }, (_, n) => n));
    expect(events.filter((e) => e.kind === 'assign')).toHaveLength(WAITING + 1);
  });
});
