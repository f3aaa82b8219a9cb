import { describe, expect, test } from 'vitest';
import { Queue, type QueueSettings } from '../../../src/broker/queue/queue.js';
import type { Subscriber } from '../../../src/broker/queue/group.js';
import { DELIVERIES_PER_TURN } from '../../../src/broker/queue/turn-budget.js';
import type { Delivery } from '../../../src/protocol/frames.js';
import { MemoryStore } from '../../../src/broker/store/memory.js';
import type { StoredMessage } from '../../../src/broker/store/store.js';

/**
 * A burst admitted in one turn (a commit answering many publish frames) is delivered a bounded
 * number at a time: the loop turns between (acks, publishes, lease keep-alives), order kept.
 * Before: a fan-out of 2,000 sends to 4 listeners made its 8,000 deliveries in one turn
 * (the bench's fanout4 row: the broker's longest pause 210-300 ms on a quiet machine).
 */
const settings: QueueSettings = { prefetch: 1, ttlMs: null, maxItems: 100_000, overflow: 'drop-oldest', requeueIntervalMs: 30_000, requeueLimit: 5, deadLetter: null };

function listener(name: string): Subscriber & { got: Delivery[] } {
  const got: Delivery[] = [];
  return { clientName: name, mode: 'listen', prefetch: Infinity, isWritable: () => true, deliver: (d) => void got.push(d), got };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('deliveries per turn of the event loop', () => {
  test('2,000 messages accepted at once for 4 listeners: at most DELIVERIES_PER_TURN in that turn, every one in order over the next turns', async () => {
    const queue = new Queue('q/v1', settings, { now: () => Date.now(), store: new MemoryStore(), discard: () => undefined });
    queue.setDelivering(true);
    const listeners = ['a', 'b', 'c', 'd'].map(listener);
    for (const l of listeners) queue.subscribe(l, '1');
    for (let i = 0; i < 2_000; i++) {
      const m: StoredMessage = { seq: i + 1, messageId: `m${i}`, queue: 'q/v1', id: '1', data: i, created: Date.now(), acceptedAt: Date.now(), from: 'p' };
      queue.accept(m);
    }
    const inTheTurn = listeners.reduce((n, l) => n + l.got.length, 0);
    expect(inTheTurn).toBe(DELIVERIES_PER_TURN);
    let turns = 0;
    while (listeners.some((l) => l.got.length < 2_000) && turns < 100) {
      await turn();
      turns++;
    }
    for (const l of listeners) expect(l.got.map((d) => d.data)).toEqual([...Array(2_000).keys()]);
    expect(turns).toBeGreaterThanOrEqual(7);
    queue.close();
  });
});
