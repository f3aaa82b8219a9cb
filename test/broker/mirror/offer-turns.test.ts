import { describe, expect, test } from 'vitest';
import { compilePolicy } from '../../../src/broker/access/policy.js';
import { Lifecycle } from '../../../src/broker/lifecycle.js';
import { ADMIT_PER_TURN } from '../../../src/broker/messages/appends.js';
import { Router } from '../../../src/broker/messages/router.js';
import { PeerFeed } from '../../../src/broker/mirror/feed.js';
import { Replica } from '../../../src/broker/mirror/replica.js';
import { MemoryStore } from '../../../src/broker/store/memory.js';
import type { StoredMessage } from '../../../src/broker/store/store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { brokerConfig } from '../../support/harness.js';

/**
 * atk27f F2: a master elected while catching up (leaseTtl 2: a renewal every 500 ms, fenced 1 s
 * after the last one) took its peers' offers (4,000-10,000 messages) in one turn of the event
 * loop, and fenced itself in 9 of 18 runs at load 6-12. Here the turns are counted (a setImmediate
 * counter), not timed: what one turn queues of the offers is bounded.
 */
class GatedStore extends MemoryStore {
  readonly gate: Array<() => void> = [];
  gated = false;
  override append(messages: readonly StoredMessage[]): Promise<void> {
    if (!this.gated) return super.append(messages);
    return new Promise((resolve) => this.gate.push(() => resolve(super.append(messages))));
  }
}

function master() {
  const store = new GatedStore();
  const lifecycle = new Lifecycle();
  const log = createLogger('silent');
  const router = new Router({ policy: compilePolicy(brokerConfig({ defaultPolicy: 'allow', maxItemsInQueue: 1_000_000 })), store, log, now: Date.now, lifecycle });
  const replica = new Replica(router);
  const feed = new PeerFeed(replica, log, () => 1 << 30);
  router.observe({ settled: (e) => feed.settled(e), made: (m) => feed.made(m), storedFromClient: (m) => replica.storedFromClient(m) });
  // the turn each message entered its queue
  let turn = 0;
  let counting = true;
  const count = () => {
    turn++;
    if (counting) setImmediate(count);
  };
  setImmediate(count);
  const queuedIn: Array<[string, number]> = [];
  router.tap((m) => void queuedIn.push([m.messageId, turn]));
  const stop = () => (counting = false);
  return { store, replica, queuedIn, stop };
}

const offered = (messageId: string) => ({ messageId, queue: 'ev/v1', id: '1', data: { n: messageId }, created: Date.now(), acceptedAt: Date.now(), from: 'p' });
const perTurn = (queuedIn: ReadonlyArray<[string, number]>) => {
  const counts = new Map<number, number>();
  for (const [, turn] of queuedIn) counts.set(turn, (counts.get(turn) ?? 0) + 1);
  return Math.max(...counts.values());
};

describe('a master taking its peers\' offers in bounded turns (atk27f F2)', () => {
  test('offers whose writes end together are queued a part a turn, in the order offered', async () => {
    const { store, replica, queuedIn, stop } = master();
    const frames = Array.from({ length: 4 }, (_, f) => Array.from({ length: 1_000 }, (_, i) => offered(`o${f}-${i}`)));
    // one synced write ends them all (a group commit)
    store.gated = true;
    const applying = frames.map((frame) => replica.applyMessages(frame));
    store.gated = false;
    for (const go of store.gate.splice(0)) go();
    await Promise.all(applying);
    stop();
    expect(queuedIn.map(([id]) => id)).toEqual(frames.flat().map((m) => m.messageId));
    // before: 4,000 in one turn
    expect(perTurn(queuedIn)).toBeLessThanOrEqual(ADMIT_PER_TURN + 250);
  });
});
