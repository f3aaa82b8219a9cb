import { describe, expect, test } from 'vitest';
import { compilePolicy } from '../../../src/broker/access/policy.js';
import { Lifecycle } from '../../../src/broker/lifecycle.js';
import { Intake } from '../../../src/broker/messages/intake.js';
import { Router } from '../../../src/broker/messages/router.js';
import { Replica } from '../../../src/broker/mirror/replica.js';
import { Subscription, type SubscriptionOwner } from '../../../src/broker/queue/subscription.js';
import { GatedStore } from '../../support/gated-store.js';
import type { StoreEvent } from '../../../src/broker/store/store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import type { Delivery } from '../../../src/protocol/frames.js';
import { brokerConfig } from '../../support/harness.js';

/** The message path without sockets: intake -> appends -> router -> queue, and a replica beside it. */
class RecordingGatedStore extends GatedStore {
  readonly events: StoreEvent[] = [];
  override record(events: readonly StoreEvent[]): void {
    this.events.push(...events);
    super.record(events);
  }
}

function setup(overrides: Record<string, unknown> = {}, now: () => number = Date.now) {
  const store = new RecordingGatedStore();
  const lifecycle = new Lifecycle();
  const router = new Router({ policy: compilePolicy(brokerConfig({ defaultPolicy: 'allow', ...overrides })), store, log: createLogger('silent'), now, lifecycle });
  return { store, lifecycle, router, intake: new Intake(router, lifecycle), replica: new Replica(router) };
}

function consumer(name: string): SubscriptionOwner & { got: Delivery[] } {
  const got: Delivery[] = [];
  return { clientName: name, label: name, got, isWritable: () => true, queueDelivery: (d) => void got.push(d) };
}

const msg = (messageId: string, id = '1') => ({ messageId, channel: `jobs/v1/${id}`, data: { n: 1 }, created: Date.now() });

describe('intake', () => {
  test('a message is stored, queued and delivered to a consumer; the index knows its queue', async () => {
    const { router, intake } = setup();
    const owner = consumer('w');
    const sub = new Subscription(owner, 1, 'consume', 'jobs/v1', 10);
    expect(router.subscribe(sub, ['*'])).toEqual([]);
    expect(await intake.publish('p', [msg('m-1')])).toEqual([{ messageId: 'm-1' }]);
    expect(owner.got.map((d) => d.messageId)).toEqual(['m-1']);
    expect(router.holding('m-1')?.name).toBe('jobs/v1');
    router.ack(sub, 'm-1', '*', true, 0);
    expect(router.holding('m-1')).toBeUndefined();
    expect(router.isKnown('m-1')).toBe(true);
  });

  test('one id twice in a frame is stored once and both copies answered alike', async () => {
    const { router, intake } = setup();
    expect(await intake.publish('p', [msg('m-1'), msg('m-1')])).toEqual([{ messageId: 'm-1' }, { messageId: 'm-1' }]);
    expect(router.queues.get('jobs/v1')!.size).toBe(1);
  });

  test('dedupe: a settled id stays known for the window of its acceptance, whatever order messages are settled in', async () => {
    let clock = 1_000_000;
    const { router, intake } = setup({ dedupeWindow: 10 }, () => clock);
    const owner = consumer('w');
    const sub = new Subscription(owner, 1, 'consume', 'jobs/v1', 10);
    router.subscribe(sub, ['*']);
    await intake.publish('p', [msg('early')]);
    clock += 5_000;
    await intake.publish('p', [msg('late')]);
    clock += 1_000;
    router.ack(sub, 'late', '*', true, 0); // settled first, accepted last
    clock += 1_000;
    router.ack(sub, 'early', '*', true, 0);
    expect(await intake.publish('p', [msg('early'), msg('late')])).toEqual([{ messageId: 'early' }, { messageId: 'late' }]);
    expect(owner.got.map((d) => d.messageId)).toEqual(['early', 'late']);
    clock += 4_000; // 11 s after 'early' was accepted, 6 s after 'late'
    await intake.publish('p', [msg('early'), msg('late')]);
    expect(owner.got.map((d) => d.messageId)).toEqual(['early', 'late', 'early']);
    clock += 5_000;
    await intake.publish('p', [msg('late')]);
    expect(owner.got.map((d) => d.messageId)).toEqual(['early', 'late', 'early', 'late']);
  });

  test('a second frame with an id whose append is under way waits for it and is not stored twice', async () => {
    const { router, intake, store } = setup();
    store.gated = true;
    const first = intake.publish('p', [msg('m-1')]);
    const second = intake.publish('p', [msg('m-1')]);
    expect(store.gate).toHaveLength(1);
    store.gate[0]!();
    expect(await first).toEqual([{ messageId: 'm-1' }]);
    expect(await second).toEqual([{ messageId: 'm-1' }]);
    expect(router.queues.get('jobs/v1')!.size).toBe(1);
  });

  test('refused sends carry their code: forbidden, bad format, nothing, stopping', async () => {
    const { intake, lifecycle } = setup({ defaultPolicy: 'deny', rules: [{ client: 'p', write: ['jobs/*'] }] });
    const [forbidden, empty] = await intake.publish('p', [{ ...msg('a'), channel: 'other/v1/1' }, { ...msg('b'), data: null }]);
    expect(forbidden!.error?.code).toBe('E_FORBIDDEN');
    expect(empty!.error?.code).toBe('E_NO_VALUE');
    lifecycle.enter('draining');
    const [stopping] = await intake.publish('p', [msg('c')]);
    expect(stopping!.error?.code).toBe('E_STOPPING');
  });

  test('a store that fails answers E_STORE and queues nothing', async () => {
    const failing = setup();
    failing.store.append = () => Promise.reject(new Error('disk full'));
    const [result] = await failing.intake.publish('p', [msg('m-1')]);
    expect(result!.error?.code).toBe('E_STORE');
    expect(failing.router.holding('m-1')).toBeUndefined();
    expect(failing.router.queues.get('jobs/v1')?.size ?? 0).toBe(0);
  });
});

describe('replica', () => {
  test("a removal from the master that overtakes the slave's own store write: the copy is not queued once stored", async () => {
    const { router, intake, replica, store } = setup({ isMaster: false });
    store.gated = true;
    const sending = intake.publish('producer', [msg('m-1')]);
    expect(store.gate).toHaveLength(1);
    replica.applySettled([], ['m-1']);
    store.gate[0]!();
    expect(await sending).toEqual([{ messageId: 'm-1' }]);
    expect(router.holding('m-1')).toBeUndefined();
    expect([...router.queues.values()].reduce((n, q) => n + q.size, 0)).toBe(0);
    expect(store.events).toContainEqual({ kind: 'remove', messageId: 'm-1' });
  });

  test("a slave queues messages in the order it began storing them: a client's copy before the master's next one, whichever write ends first", async () => {
    const { router, intake, replica, store } = setup({ isMaster: false });
    store.gated = true;
    // the client's copy of m-1 comes first; the master's feed then names m-1 (under way here) and m-2
    const sending = intake.publish('producer', [msg('m-1')]);
    const peer = (messageId: string) => ({ messageId, queue: 'jobs/v1', id: '1', data: { n: 1 }, created: 1, acceptedAt: Date.now(), from: 'producer' });
    const applying = replica.applyMessages([peer('m-1'), peer('m-2')]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(store.gate).toHaveLength(2);
    store.gate[1]!(); // m-2's write ends first
    await new Promise((resolve) => setImmediate(resolve));
    store.gate[0]!();
    await Promise.all([sending, applying]);
    // what a promoted slave delivers, and hands over in a move (SPEC §13), keeps the order per id
    expect([...router.queues.get('jobs/v1')!.heldMessages()].map((m) => m.messageId)).toEqual(['m-1', 'm-2']);
  });

  test("a slave's queue forgets a message on its master's settlement: the id is a settled id of that queue (a move hands it over)", async () => {
    const { router, intake, replica, store } = setup({ isMaster: false });
    const owner = consumer('w');
    const sub = new Subscription(owner, 1, 'consume', 'jobs/v1', 10);
    router.subscribe(sub, ['*']);
    await replica.applyMessages([{ messageId: 'm-1', queue: 'jobs/v1', id: '1', data: { n: 1 }, created: 1, acceptedAt: Date.now(), from: 'p' }]);
    // one feed frame: the group's settlement, then the removal of the message it ended
    replica.applySettled([{ messageId: 'm-1', group: 'c|*' }], ['m-1']);
    expect(router.holding('m-1')).toBeUndefined();
    expect(router.recentOf('jobs/v1').map(([messageId]) => messageId)).toEqual(['m-1']);
    // a removal that overtook the slave's own store write: the id is the queue's once the copy is stored
    store.gated = true;
    const sending = intake.publish('producer', [msg('m-2')]);
    replica.applySettled([], ['m-2']);
    store.gate[0]!();
    await sending;
    expect(router.recentOf('jobs/v1').map(([messageId]) => messageId).sort()).toEqual(['m-1', 'm-2']);
  });

  test("an ack that overtakes the master's message on a slave is applied once the message is stored", async () => {
    const { router, replica, store } = setup({ isMaster: false });
    const owner = consumer('w');
    const sub = new Subscription(owner, 1, 'consume', 'jobs/v1', 10);
    router.subscribe(sub, ['*']);
    store.gated = true;
    const peerMessage = { messageId: 'm-1', queue: 'jobs/v1', id: '1', data: { n: 1 }, created: 1, acceptedAt: Date.now(), from: 'p' };
    const applying = replica.applyMessages([peerMessage]);
    router.ack(sub, 'm-1', '*', true, 0);
    store.gate[0]!();
    await applying;
    expect(owner.got).toEqual([]); // a slave delivers nothing
    expect(router.holding('m-1')).toBeUndefined();
  });

  test('the snapshot names what is held and what was settled within the dedupe window', async () => {
    const { router, intake, replica } = setup();
    await intake.publish('p', [msg('held'), msg('gone')]);
    router.holding('gone')!.purge('1');
    const { messages, removed } = replica.snapshot();
    expect(messages.next(10).map((m) => m.messageId)).toEqual([]);
    expect(removed.sort()).toEqual(['gone', 'held']);
    await intake.publish('p', [msg('kept', '2')]);
    const later = replica.snapshot().messages;
    expect(later.next(10).map((m) => m.messageId)).toEqual(['kept']);
  });

  test('the snapshot reads the rows a chunk at a time: one settled before its chunk is left out, one sent since is not reached', async () => {
    const { router, intake, replica } = setup();
    await intake.publish('p', [msg('a'), msg('b'), msg('c')]);
    const { messages } = replica.snapshot();
    expect(messages.length).toBe(3);
    expect(messages.next(1).map((m) => m.messageId)).toEqual(['a']);
    // settled while the sync is on its first chunk: its removal reaches the follower in the feed
    router.holding('b')!.remove('b');
    await intake.publish('p', [msg('d')]);
    expect(messages.next(2).map((m) => m.messageId)).toEqual(['c']);
    expect(messages.next(2)).toEqual([]);
  });
});

describe('soft-stop', () => {
  test('whenIdle resolves when the last delivery in flight is acked, and no new delivery starts meanwhile', async () => {
    const { router, intake, lifecycle } = setup();
    const owner = consumer('w');
    const sub = new Subscription(owner, 1, 'consume', 'jobs/v1', 1);
    router.subscribe(sub, ['*']);
    await intake.publish('p', [msg('m-1'), msg('m-2')]);
    expect(owner.got.map((d) => d.messageId)).toEqual(['m-1']);
    lifecycle.enter('draining');
    let idle = false;
    const waiting = router.whenIdle().then(() => (idle = true));
    await Promise.resolve();
    expect(idle).toBe(false);
    router.ack(sub, 'm-1', '*', true, 0);
    await waiting;
    expect(idle).toBe(true);
    expect(owner.got.map((d) => d.messageId)).toEqual(['m-1']); // m-2 waits for the next start
  });
});
