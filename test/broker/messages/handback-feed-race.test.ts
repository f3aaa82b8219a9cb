import { describe, expect, test } from 'vitest';
import { compilePolicy } from '../../../src/broker/access/policy.js';
import { Lifecycle } from '../../../src/broker/lifecycle.js';
import { Intake } from '../../../src/broker/messages/intake.js';
import { Router } from '../../../src/broker/messages/router.js';
import { Replica } from '../../../src/broker/mirror/replica.js';
import { GatedStore } from '../../support/gated-store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { brokerConfig } from '../../support/harness.js';

/**
 * A slave of the old set takes a call-off's hand-back (SPEC §13, issue 31) while its master's
 * feed, which took it first, names the same messages: a message whose feed copy was still being
 * stored when the slave's import looked was skipped by the import ("held or under way") and the
 * feed's copy, once stored, waited aside with the sends taken after the call-off, and was queued
 * after them. Outside check atk31h (calloff-a-stop, set a's master SIGSTOPped once both brokers
 * took the hand-back): the slave logged `queued: 75` of 495 and, elected, gave the consumer 420
 * handed-back sends after newer ones (`seq 587 after 703`).
 */

const QUEUE = 'jobs/v1';
const sent = (messageId: string) => ({ messageId, channel: `${QUEUE}/1`, data: { n: messageId }, created: Date.now() });
const peer = (messageId: string, acceptedAt: number) => ({ messageId, queue: QUEUE, id: '1', data: { n: messageId }, created: acceptedAt, acceptedAt, from: 'p' });

describe('a call-off\'s hand-back taken by a slave while its master\'s feed names it (messages/moving.ts)', () => {
  test('a handed-back message whose feed copy is being stored keeps its hand-back place, before the sends taken after the call-off', async () => {
    const store = new GatedStore();
    const lifecycle = new Lifecycle();
    const router = new Router({ policy: compilePolicy(brokerConfig({ defaultPolicy: 'allow', isMaster: false, maxItemsInQueue: 1_000_000 })), store, log: createLogger('silent'), now: Date.now, lifecycle });
    const intake = new Intake(router, lifecycle);
    const replica = new Replica(router);
    // the call-off: the queue's new sends wait aside here until set b's hand-back is queued
    router.moving.freeze(QUEUE, true);
    router.moving.holdAside(QUEUE);
    await intake.publish('p', [sent('after-1'), sent('after-2')]);
    const t0 = Date.now() - 10_000;
    const handBack = ['h0', 'h1', 'h2', 'h3'].map((id, n) => peer(id, t0 + n));
    // the master took the hand-back first: its feed names h1 and h2, their store still under way
    store.gated = true;
    const feed = replica.applyMessages([handBack[1]!, handBack[2]!]);
    await new Promise((resolve) => setTimeout(resolve, 10));
    store.gated = false;
    // the slave's own import of the hand-back begins meanwhile
    const importing = router.moving.importMoved(QUEUE, handBack.map((message) => ({ message, records: [] })));
    await new Promise((resolve) => setTimeout(resolve, 10));
    store.gate[0]!();
    await Promise.all([feed, importing]);
    router.moving.releaseAside(QUEUE);
    expect([...router.queues.get(QUEUE)!.heldMessages()].map((m) => m.messageId)).toEqual(['h0', 'h1', 'h2', 'h3', 'after-1', 'after-2']);
  });
});
