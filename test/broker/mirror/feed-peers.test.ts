import { KeySync } from '../../../src/broker/mirror/key-sync.js';
import { KeyRegistry } from '../../../src/broker/session/keys.js';
import { describe, expect, test } from 'vitest';
import { compilePolicy } from '../../../src/broker/access/policy.js';
import { Lifecycle } from '../../../src/broker/lifecycle.js';
import { Intake } from '../../../src/broker/messages/intake.js';
import { Router } from '../../../src/broker/messages/router.js';
import { PeerFeed } from '../../../src/broker/mirror/feed.js';
import { Peers } from '../../../src/broker/mirror/peers.js';
import { Replica } from '../../../src/broker/mirror/replica.js';
import { Subscription, type SubscriptionOwner } from '../../../src/broker/queue/subscription.js';
import { MemoryStore } from '../../../src/broker/store/memory.js';
import { loadOrCreateKeys } from '../../../src/link/keys.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { type BrokerFrame, decodeBrokerFrame, type FeedFrame, type PeerStateFrame, type SyncFrame } from '../../../src/protocol/frames.js';
import { brokerConfig, tempDir } from '../../support/harness.js';

/** The master's feed and the role among mirrors, without sockets: what a follower is sent, and when. */
function master(overrides: Record<string, unknown> = {}, linkBytes = 64 * 1_048_576) {
  const lifecycle = new Lifecycle();
  const log = createLogger('silent');
  const router = new Router({ policy: compilePolicy(brokerConfig({ defaultPolicy: 'allow', ...overrides })), store: new MemoryStore(), log, now: Date.now, lifecycle });
  const replica = new Replica(router);
  const feed = new PeerFeed(replica, log, () => linkBytes);
  router.observe({ settled: (e) => feed.settled(e), made: (m) => feed.made(m), storedFromClient: (m) => replica.storedFromClient(m) });
  return { lifecycle, router, replica, feed, intake: new Intake(router, lifecycle), log };
}

function follower() {
  const frames: BrokerFrame[] = [];
  // an encoded frame is read back as the mirror reads it: the protocol's own decoder
  return { frames, send: (frame: BrokerFrame) => void frames.push(frame), sendText: (text: string) => void frames.push(decodeBrokerFrame(text)), whenWritable: () => Promise.resolve(), unsentBytes: 0, dropLagging: () => undefined };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));
const msg = (messageId: string) => ({ messageId, channel: 'jobs/v1/1', data: { n: messageId }, created: 1 });

describe('feed', () => {
  test('a follower gets a sync of what is held and settled, then every message and settlement in feed frames', async () => {
    const { router, intake, feed } = master();
    await intake.publish('p', [msg('held'), msg('acked')]);
    const owner: SubscriptionOwner = { clientName: 'w', label: 'w', isWritable: () => true, queueDelivery: () => undefined };
    const sub = new Subscription(owner, 1, 'consume', 'jobs/v1', 10);
    router.subscribe(sub, ['*']);
    router.ack(sub, 'acked', '*', true, 0);
    const f = follower();
    feed.follow(f);
    await tick();
    const syncs = f.frames.filter((frame): frame is SyncFrame => frame.type === 'sync');
    expect(syncs.at(-1)?.done).toBe(true);
    expect(syncs.flatMap((s) => s.messages.map((m) => m.messageId))).toEqual(['held']);
    expect(syncs.flatMap((s) => s.removed)).toEqual(['acked']);
    expect(feed.followerCount).toBe(1);

    await intake.publish('p', [msg('new')]);
    router.ack(sub, 'held', '*', true, 0);
    await tick();
    const feeds = f.frames.filter((frame): frame is FeedFrame => frame.type === 'feed');
    expect(feeds.flatMap((x) => x.messages.map((m) => m.messageId))).toEqual(['new']);
    expect(feeds.flatMap((x) => x.settled)).toContainEqual({ messageId: 'held', group: expect.any(String) as string });
    expect(feeds.flatMap((x) => x.removed)).toContain('held');
  });

  test("with a history catch-up, the sync's last messages reach the follower before the feed of what was accepted meanwhile (atk27e E5: a restarted slave queued 905 sends after newer ones)", async () => {
    const { intake, feed } = master({ maxItemsInQueue: 10_000 });
    const before = Array.from({ length: 1_500 }, (_, i) => msg(`old-${i}`));
    await intake.publish('p', before);
    const f = follower();
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    // the link is slow while the sync's first chunk is on its way: a send is accepted meanwhile
    const link = { ...f, whenWritable: () => opened };
    feed.follow(link, []);
    await tick();
    await intake.publish('p', [msg('new')]);
    await tick();
    open();
    for (let i = 0; i < 10 && !f.frames.some((frame) => frame.type === 'sync' && frame.done); i++) await tick();
    const named = f.frames.flatMap((frame) => (frame.type === 'sync' || frame.type === 'feed' ? frame.messages.map((m) => m.messageId) : []));
    expect(named).toEqual([...before.map((m) => m.messageId), 'new']);
    expect(f.frames.findLast((frame) => frame.type === 'sync')).toMatchObject({ done: true });
  });

  test('a slave answers no follow; a demoted master forgets its followers', async () => {
    const slave = master({ isMaster: false });
    const f = follower();
    slave.feed.follow(f);
    await tick();
    expect(f.frames).toEqual([]);

    const m = master();
    const g = follower();
    m.feed.follow(g);
    await tick();
    expect(m.feed.followerCount).toBe(1);
    m.feed.demoted();
    await m.intake.publish('p', [msg('after')]);
    await tick();
    expect(g.frames.filter((frame) => frame.type === 'feed')).toEqual([]);
  });
});

describe('a follower that does not read (limits.maxMirrorLinkBytes)', () => {
  test('its sync waits for the link to drain; the feed waiting behind it past the bound drops the follower, once', async () => {
    const { intake, feed } = master({ maxItemsInQueue: 10_000 }, 65_536);
    await intake.publish('p', Array.from({ length: 1_500 }, (_, i) => msg(`held-${i}`)));
    const drops: Array<[number, number]> = [];
    // a link that never drains: whenWritable never resolves
    const f = { ...follower(), whenWritable: () => new Promise<void>(() => undefined), clientName: 'b', dropLagging: (owed: number, limit: number) => void drops.push([owed, limit]) };
    feed.follow(f);
    await tick();
    expect(f.frames.filter((frame) => frame.type === 'sync')).toEqual([]); // the first chunk waits
    expect(feed.followers().get('b')).toEqual({ inStep: false, owedBytes: 0 });
    for (let i = 0; i < 200 && drops.length === 0; i++) {
      await intake.publish('p', Array.from({ length: 10 }, (_, j) => msg(`new-${i}-${j}`)));
      await tick();
    }
    expect(drops).toHaveLength(1);
    expect(drops[0]![0]).toBeGreaterThan(65_536);
    expect(drops[0]![1]).toBe(65_536);
    expect(feed.followers().has('b')).toBe(false);
    await intake.publish('p', [msg('after')]);
    await tick();
    expect(drops).toHaveLength(1);
  });
});

describe('peers', () => {
  function peers(serviceId: string, lifecycle = new Lifecycle()) {
    const { replica, log } = master();
    const roles: boolean[] = [];
    const states: PeerStateFrame[] = [];
    const keySync = new KeySync({ registry: new KeyRegistry(tempDir()), log, isMaster: () => false, delivers: () => false, links: () => [], closeSessions: () => 0 });
    const set = new Peers({ serviceId, dialOptions: () => ({ tls: undefined, heartbeatTimeoutMs: 5000 }), keys: loadOrCreateKeys(tempDir(), serviceId), log, replica, keySync, backlogBytes: () => 16 * 1_048_576, onRoleChange: (isMaster) => void roles.push(isMaster), onStateChange: (s) => void states.push(s) }, lifecycle);
    return { set, roles, states, lifecycle };
  }

  test('configured master with no peer in sight: delivers, and says so to its peers', () => {
    const { set, roles, states } = peers('a');
    set.configure([], true);
    expect(set.isMaster).toBe(true);
    expect(roles).toEqual([true]);
    expect(states.at(-1)).toEqual({ type: 'peerState', serviceId: 'a', configuredMaster: true, isMaster: true, keys: true, resumes: true });
  });

  test('two configured masters that see each other: the lower serviceId delivers, both report the conflict, it ends when one yields', () => {
    const b = peers('b');
    b.set.configure([], true);
    const link = {};
    b.set.observeIncoming(link, 'a', { configuredMaster: true, isMaster: true });
    expect(b.set.isMaster).toBe(false);
    expect(b.set.conflict).toEqual({ masters: ['a', 'b'], delivering: 'a' });
    expect(b.roles).toEqual([true, false]);
    b.set.observeIncoming(link, 'a', undefined); // a's link closed
    expect(b.set.conflict).toBeNull();
    expect(b.set.isMaster).toBe(true);
  });

  test('soft-stop: a draining master stops counting as one for its peers at once', () => {
    const { set, states, lifecycle } = peers('a');
    set.configure([], true);
    lifecycle.enter('draining');
    expect(states.at(-1)).toEqual({ type: 'peerState', serviceId: 'a', configuredMaster: false, isMaster: false, keys: true });
  });
});
