import { describe, expect, test } from 'vitest';
import { compilePolicy } from '../../../src/broker/access/policy.js';
import { Lifecycle } from '../../../src/broker/lifecycle.js';
import { Intake } from '../../../src/broker/messages/intake.js';
import { Router } from '../../../src/broker/messages/router.js';
import { PeerFeed } from '../../../src/broker/mirror/feed.js';
import { Replica } from '../../../src/broker/mirror/replica.js';
import { GatedStore } from '../../support/gated-store.js';
import { type BrokerFrame, decodeBrokerFrame } from '../../../src/protocol/frames.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { brokerConfig } from '../../support/harness.js';


/** a master as src/broker/parts.ts wires it (router, replica, feed), without sockets */
function master() {
  const store = new GatedStore();
  const lifecycle = new Lifecycle();
  const log = createLogger('silent');
  const router = new Router({ policy: compilePolicy(brokerConfig({ defaultPolicy: 'allow', maxItemsInQueue: 100_000 })), store, log, now: Date.now, lifecycle });
  const replica = new Replica(router);
  const feed = new PeerFeed(replica, log, () => 64 * 1_048_576);
  router.observe({
    settled: (e) => feed.settled(e),
    made: (m) => feed.made(m),
    storedFromClient: (m) => {
      replica.storedFromClient(m);
      feed.storedWhileFenced(m);
    },
    offeredWhileFenced: (m) => feed.storedWhileFenced(m),
  });
  // the role change as parts.ts makes it (Peers.onRoleChange, then Peers.update's catch-up)
  const fenced = () => {
    router.setMaster(false);
    feed.demoted();
    replica.beginCatchUp();
  };
  return { store, router, replica, feed, intake: new Intake(router, lifecycle), fenced };
}

function follower() {
  const frames: BrokerFrame[] = [];
  return { frames, send: (frame: BrokerFrame) => void frames.push(frame), sendText: (text: string) => void frames.push(decodeBrokerFrame(text)), whenWritable: () => Promise.resolve(), unsentBytes: 0, dropLagging: () => undefined };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));
const sent = (messageId: string) => ({ messageId, channel: 'ev/v1/1', data: { n: messageId }, created: Date.now() });
const offered = (messageId: string) => ({ messageId, queue: 'ev/v1', id: '1', data: { n: messageId }, created: Date.now(), acceptedAt: Date.now(), from: 'p' });
const named = (frames: readonly BrokerFrame[]) => frames.flatMap((frame) => (frame.type === 'feed' || frame.type === 'sync' ? frame.messages.map((m) => m.messageId) : []));

describe('a master fenced while it stores what a peer offered (atk27f f1 PAUSE=1300)', () => {
  test('the feed it kept for its followers names the offered messages, before the clients\' copies it held: their histories take its order', async () => {
    const { store, router, replica, feed, intake, fenced } = master();
    const f = follower();
    feed.follow(f);
    for (let i = 0; i < 5 && !f.frames.some((frame) => frame.type === 'sync' && frame.done); i++) await tick();
    expect(f.frames.at(-1)).toMatchObject({ type: 'sync', done: true });
    f.frames.length = 0;

    // elected while catching up: a client's copy waits for the peers' offers
    router.catchUp.begin();
    await intake.publish('p', [sent('client-1')]);
    // a peer's offer arrives; the master is paused (SIGSTOP) while the store writes it, and judges
    // its fence before the write's completion when it runs again
    store.gated = true;
    const applying = replica.applyMessages([offered('offer-1'), offered('offer-2')]);
    fenced();
    store.gated = false;
    for (const go of store.gate.splice(0)) go();
    await applying;
    await tick();
    expect(router.isKnown('offer-1')).toBe(true);

    // elected again under the same epoch: the follower resumes the feed kept since the fence
    router.setMaster(true);
    feed.follow(f, undefined, true);
    await tick();
    expect(f.frames.at(-1)).toMatchObject({ type: 'sync', resumed: true });
    // every peer ended its offer: the clients' copies held are queued (and named) after the offers
    replica.endCatchUp('every awaited peer ended its offer');
    await tick();
    // before the fix the kept feed never named offer-1 and offer-2: the follower held its own
    // copies of them for 30 s and wrote them at the end of its history (atk27f f1: 211-1,458 records)
    expect(named(f.frames)).toEqual(['offer-1', 'offer-2', 'client-1']);
  });
});
