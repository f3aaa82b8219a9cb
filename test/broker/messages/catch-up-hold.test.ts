import { describe, expect, test } from 'vitest';
import { compilePolicy } from '../../../src/broker/access/policy.js';
import { Lifecycle } from '../../../src/broker/lifecycle.js';
import { CATCH_UP_HOLD_MAX_BYTES, NAMING_HOLD_MS } from '../../../src/broker/messages/catch-up-hold.js';
import { Intake } from '../../../src/broker/messages/intake.js';
import { Router } from '../../../src/broker/messages/router.js';
import { Replica } from '../../../src/broker/mirror/replica.js';
import { UNCONFIRMED_AFTER_MS } from '../../../src/broker/mirror/unconfirmed.js';
import { Subscription, type SubscriptionOwner } from '../../../src/broker/queue/subscription.js';
import { GatedStore } from '../../support/gated-store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import type { Delivery } from '../../../src/protocol/frames.js';
import { brokerConfig } from '../../support/harness.js';

/**
 * A mirror catching up (issue 27, docs/operations.md#catching-up), without sockets: a slave just
 * started holds its clients' copies out of its queues until its master's sync is done; what the
 * sync brings is queued first, and a restart would load it first too (its seqs come before).
 */

function setup(isMaster: boolean, now: () => number = Date.now) {
  const store = new GatedStore();
  const lifecycle = new Lifecycle();
  const router = new Router({ policy: compilePolicy(brokerConfig({ defaultPolicy: 'allow', isMaster, maxItemsInQueue: 1_000_000 })), store, log: createLogger('silent'), now, lifecycle });
  return { store, router, intake: new Intake(router, lifecycle), replica: new Replica(router) };
}

function consumer(): SubscriptionOwner & { got: Delivery[] } {
  const got: Delivery[] = [];
  return { clientName: 'w', label: 'w', got, isWritable: () => true, queueDelivery: (d) => void got.push(d) };
}

const sent = (messageId: string, data: unknown = { n: messageId }) => ({ messageId, channel: 'jobs/v1/1', data, created: Date.now() });
const fromMaster = (messageId: string) => ({ messageId, queue: 'jobs/v1', id: '1', data: { n: messageId }, created: Date.now(), acceptedAt: Date.now(), from: 'p' });

describe('a mirror catching up (messages/catch-up-hold.ts)', () => {
  test("clients' copies wait until the sync is done; what the sync brought goes first, also by seq; a copy the sync named is not queued twice", async () => {
    const { router, intake, replica } = setup(false);
    // its client subscribed here too (a slave delivers nothing: the group takes records)
    const owner = consumer();
    router.subscribe(new Subscription(owner, 1, 'consume', 'jobs/v1', 100), ['*']);
    router.catchUp.begin();
    await intake.publish('p', [sent('new-1'), sent('new-2'), sent('both')]);
    expect(router.queues.get('jobs/v1')?.size ?? 0).toBe(0);
    expect(router.isKnown('new-1')).toBe(true);
    await replica.applyMessages([fromMaster('old-1'), fromMaster('old-2'), fromMaster('both')]);
    replica.applySettled([{ messageId: 'new-2', group: 'c|*' }], []);
    replica.endCatchUp('in step');
    expect(router.catchUp.active).toBe(false);
    const queue = router.queues.get('jobs/v1')!;
    const held = [...queue.heldMessages()];
    // what the sync brought, then the copies it named (in its order), then the others
    expect(held.map((m) => m.messageId)).toEqual(['old-1', 'old-2', 'both', 'new-1']);
    // the sync's seqs before the copies': a restart loads them back first
    expect(Math.max(held[0]!.seq, held[1]!.seq)).toBeLessThan(Math.min(held[2]!.seq, held[3]!.seq));
    // promoted: the consumer gets them in that order, new-2 was settled by the master meanwhile
    expect(owner.got).toEqual([]);
    router.setMaster(true);
    expect(owner.got.map((d) => d.messageId)).toEqual(['old-1', 'old-2', 'both', 'new-1']);
  });

  test("the master's settlement of a copy still being stored when it arrives is kept for the copy held", async () => {
    const { router, intake, replica, store } = setup(false);
    const owner = consumer();
    router.subscribe(new Subscription(owner, 1, 'consume', 'jobs/v1', 100), ['*']);
    router.catchUp.begin();
    store.gated = true;
    const publishing = intake.publish('p', [sent('slow')]);
    replica.applySettled([{ messageId: 'slow', group: 'c|*' }], []);
    store.gate[0]!();
    await publishing;
    replica.endCatchUp('in step');
    expect(router.queues.get('jobs/v1')!.size).toBe(0);
  });

  test("a move freezing a queue queues what the catch-up holds first (a hand-over exports it), and holds nothing of that queue after (atk31g F1)", async () => {
    const { router, intake } = setup(true);
    router.catchUp.begin();
    await intake.publish('p', [sent('held-1'), sent('held-2')]);
    expect(router.queues.get('jobs/v1')?.size ?? 0).toBe(0);
    router.moving.freeze('jobs/v1', true);
    expect([...router.queues.get('jobs/v1')!.heldMessages()].map((m) => m.messageId)).toEqual(['held-1', 'held-2']);
    router.catchUp.begin();
    await intake.publish('p', [sent('during-move')]);
    expect(router.queues.get('jobs/v1')!.size).toBe(3);
  });

  test("copies the master's sync names are queued in its order, before the others (a copy re-sent at a reconnection arrived after a newer one: ci18, 1,753 after 1,756)", async () => {
    const { router, intake, replica } = setup(false);
    router.catchUp.begin();
    await intake.publish('p', [sent('n2'), sent('n1'), sent('n4'), sent('n3')]);
    await replica.applyMessages([fromMaster('n0'), fromMaster('n1'), fromMaster('n2')]);
    replica.endCatchUp('in step');
    expect([...router.queues.get('jobs/v1')!.heldMessages()].map((m) => m.messageId)).toEqual(['n0', 'n1', 'n2', 'n4', 'n3']);
  });

  test("a slave's held copy the master's feed names is queued in the feed's order, among the messages it brings that this broker lacked (atk27e E5: 436-578 OK sends out of order)", async () => {
    const { router, intake, replica, store } = setup(false);
    router.catchUp.begin();
    // re-sent at the client's reconnection; the sends after them reached this broker by the feed first
    await intake.publish('p', [sent('h1'), sent('h2')]);
    await replica.applyMessages([fromMaster('o1'), fromMaster('h1')]);
    // a copy still being stored when the feed names it keeps the feed's place too
    store.gated = true;
    const publishing = intake.publish('p', [sent('h3')]);
    store.gated = false;
    const applying = replica.applyMessages([fromMaster('h2'), fromMaster('f3'), fromMaster('h3'), fromMaster('f4')]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    store.gate[0]!();
    await Promise.all([publishing, applying]);
    await intake.publish('p', [sent('h5')]);
    replica.endCatchUp('in step');
    expect([...router.queues.get('jobs/v1')!.heldMessages()].map((m) => m.messageId)).toEqual(['o1', 'h1', 'h2', 'f3', 'h3', 'f4', 'h5']);
  });

  test("in step, a slave's client copies wait for its master's feed to name them, and are queued in its order (a client's link back here before its older sends reached us by the feed: atk27e E5, 45-165 out of order)", async () => {
    const { router, intake, replica } = setup(false);
    const queued = () => [...(router.queues.get('jobs/v1')?.heldMessages() ?? [])].map((m) => m.messageId);
    router.catchUp.begin();
    await intake.publish('p', [sent('n2')]);
    // the sync is done; n2 not named yet: it keeps waiting
    replica.endCatchUp('in step', true);
    expect(queued()).toEqual([]);
    await intake.publish('p', [sent('n3'), sent('n5')]);
    await replica.applyMessages([fromMaster('n1'), fromMaster('n2'), fromMaster('n3'), fromMaster('n4')]);
    expect(queued()).toEqual(['n1', 'n2', 'n3', 'n4']);
    // promoted before the master named n5: queued as it arrived, before deliveries begin
    router.setMaster(true);
    expect(queued()).toEqual(['n1', 'n2', 'n3', 'n4', 'n5']);
  });

  test('in step, a copy the master does not name is queued after NAMING_HOLD_MS, and at once when the slave falls out of step', async () => {
    let now = 1_000_000;
    const { router, intake, replica } = setup(false, () => now);
    const queued = () => [...(router.queues.get('jobs/v1')?.heldMessages() ?? [])].map((m) => m.messageId);
    replica.startTracking('a', 2);
    await intake.publish('p', [sent('lone')]);
    now += NAMING_HOLD_MS - 1;
    await intake.publish('p', [sent('later')]);
    expect(router.catchUp.releaseUnnamed()).toBe(0);
    now += 1;
    expect(router.catchUp.releaseUnnamed()).toBe(1);
    expect(queued()).toEqual(['lone']);
    replica.stopTracking();
    expect(queued()).toEqual(['lone', 'later']);
    await intake.publish('p', [sent('out-of-step')]);
    expect(queued()).toEqual(['lone', 'later', 'out-of-step']);
  });

  test("what a slave offered its master after a sync is offered again if the master never names it (atk27f F1: a master fenced for a moment as the offer reached it lost 21-93 sends answered E_NO_MASTER with storedBy)", async () => {
    let now = 1_000_000;
    const { router, intake, replica } = setup(false, () => now);
    router.catchUp.begin();
    await intake.publish('p', [sent('only-here')]);
    replica.endCatchUp('in step', true);
    replica.startTracking('a', 2);
    // the sync did not name it: offered (peer-link.ts #offerHeldOnlyHere), the master fenced meanwhile
    const { messages } = await replica.heldOnlyHere(new Set(), 'a', 2);
    expect(messages.map((m) => m.messageId)).toEqual(['only-here']);
    replica.trackOffered(messages.map((m) => m.messageId));
    now += UNCONFIRMED_AFTER_MS + 1;
    expect((await replica.takeUnconfirmed(UNCONFIRMED_AFTER_MS)).map((m) => m.messageId)).toEqual(['only-here']);
    // named by the master meanwhile: not offered again
    replica.trackOffered(['only-here']);
    await replica.applyMessages([fromMaster('only-here')]);
    now += UNCONFIRMED_AFTER_MS + 1;
    expect(await replica.takeUnconfirmed(UNCONFIRMED_AFTER_MS)).toEqual([]);
  });

  test("in step, a held copy the master settles for good (its feed's removed) goes at once: not counted as stored for NAMING_HOLD_MS (CI preview ci21: election-partition's 'every broker empty' poll)", async () => {
    const { router, intake, replica } = setup(false);
    replica.startTracking('a', 2);
    await intake.publish('p', [sent('done'), sent('waiting')]);
    expect(router.queues.get('jobs/v1')!.storedCount).toBe(2);
    replica.applySettled([], ['done']);
    expect(router.queues.get('jobs/v1')!.storedCount).toBe(1);
    expect(router.catchUp.heldCopy('done')).toBeUndefined();
    await replica.applyMessages([fromMaster('done'), fromMaster('waiting')]);
    expect([...router.queues.get('jobs/v1')!.heldMessages()].map((m) => m.messageId)).toEqual(['waiting']);
  });

  test("in step, a client's ack of a copy held for the master's naming is kept: promoted before the master's settlement came, the slave does not deliver it again (CI preview ci22: step-down, 5 twice)", async () => {
    const { router, intake, replica } = setup(false);
    const owner = consumer();
    const sub = new Subscription(owner, 1, 'consume', 'jobs/v1', 100);
    router.subscribe(sub, ['*']);
    replica.startTracking('a', 2);
    await intake.publish('p', [sent('acked'), sent('open')]);
    // the old master delivered both; the consumer acked one to every broker
    router.ack(sub, 'acked', '*', true, 0);
    router.setMaster(true);
    expect(owner.got.map((d) => d.messageId)).toEqual(['open']);
  });

  test('a copy removed by the master while held is not queued at the end', async () => {
    const { router, intake, replica } = setup(false);
    router.catchUp.begin();
    await intake.publish('p', [sent('a'), sent('b')]);
    replica.applySettled([], ['a']);
    replica.endCatchUp('in step');
    expect([...router.queues.get('jobs/v1')!.heldMessages()].map((m) => m.messageId)).toEqual(['b']);
  });

  test('past its bound (64 MiB of bodies) every copy held is queued, where it arrived, and nothing more is held', async () => {
    const { router, intake } = setup(false);
    router.catchUp.begin();
    const body = 'x'.repeat(1_048_576);
    const count = Math.ceil(CATCH_UP_HOLD_MAX_BYTES / body.length);
    for (let i = 0; i < count - 1; i++) await intake.publish('p', [sent(`m-${i}`, { body })]);
    expect(router.queues.get('jobs/v1')?.size ?? 0).toBe(0);
    await intake.publish('p', [sent(`m-${count - 1}`, { body })]);
    expect(router.catchUp.active).toBe(false);
    expect(router.queues.get('jobs/v1')!.size).toBe(count);
    await intake.publish('p', [sent('after')]);
    expect(router.queues.get('jobs/v1')!.size).toBe(count + 1);
  });
});
