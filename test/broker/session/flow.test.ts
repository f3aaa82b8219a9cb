import '../../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { describe, expect, test } from 'vitest';
import type { Delivery } from '../../../src/protocol/frames.js';
import { broker, connect, Inbox, type TestBroker, until } from '../../support/harness.js';
import { newKeyPair, RawPeer } from '../../support/raw-peer.js';

/**
 * The `flow` frame (docs/protocol.md#flow, issue 29 item 5): a subscription's unacked
 * deliveries held to a limit beneath its prefetch, listeners too; 0 pauses without failing
 * what is held. Spoken as a third-party client would, frame by frame. A second subscription
 * with no limit on the same messages is the barrier: the broker hands a message to every
 * group in one turn, so once the barrier has it, a delivery to the held one would have come.
 */
const sub = (n: number, mode: 'consume' | 'listen', extra: Record<string, unknown> = {}) => ({ type: 'subscribe', sub: n, mode, endpoint: 'jobs', version: 'v1', ids: ['*'], ...extra });
const of = (peer: RawPeer, n: number): Delivery[] => peer.deliveries().filter((d) => d.sub === n);

async function opened(b: TestBroker, name = 'third-party'): Promise<RawPeer> {
  const peer = await RawPeer.open(b.port);
  const welcome = await peer.login(name, newKeyPair());
  expect(welcome.features).toContain('flow');
  return peer;
}

async function sent(b: TestBroker, count: number): Promise<string[]> {
  const producer = await connect('producer', b.hostSpec);
  const ids: string[] = [];
  for (let n = 0; n < count; n++) ids.push((await producer.send('jobs/v1/a', { n })).messageId);
  await producer.disconnect();
  return ids;
}

describe('flow', () => {
  test('a consumer subscribed with limit 0 takes nothing; a limit lets that many out; 0 again holds what it has without failing it; null lifts it', async () => {
    const b = await broker({ requeueLimit: 1 });
    const peer = await opened(b);
    expect((await peer.request(sub(1, 'consume', { prefetch: 5, limit: 0 }))).error).toBeUndefined();
    expect((await peer.request(sub(2, 'listen'))).error).toBeUndefined(); // the barrier
    const ids = await sent(b, 4);
    await until(() => of(peer, 2).length === 4);
    expect(of(peer, 1)).toEqual([]);
    const queue = b.router.queues.get('jobs/v1')!;

    peer.sendJson({ type: 'flow', sub: 1, limit: 2 });
    await until(() => of(peer, 1).length === 2);
    expect(of(peer, 1).map((d) => d.messageId)).toEqual(ids.slice(0, 2));

    // paused with two in hand: they stay in flight and their acks count; the freed slots stay empty
    peer.sendJson({ type: 'flow', sub: 1, limit: 0 });
    peer.sendJson({ type: 'ack', acks: of(peer, 1).map((d) => ({ sub: 1, messageId: d.messageId, via: d.via, ok: true })) });
    const [fifth] = await sent(b, 1);
    await until(() => of(peer, 2).length === 5);
    expect(of(peer, 1)).toHaveLength(2);
    expect(queue.counters).toMatchObject({ acked: 2, requeued: 0, deadLettered: 0, dropped: 0 });

    peer.sendJson({ type: 'flow', sub: 1, limit: null }); // prefetch 5 again
    await until(() => of(peer, 1).length === 5);
    expect(of(peer, 1).map((d) => d.messageId)).toEqual([...ids, fifth]);
    expect(of(peer, 1).every((d) => d.nbRequeues === 0)).toBe(true);
    expect(queue.counters).toMatchObject({ requeued: 0, deadLettered: 0, dropped: 0, timedOut: 0 });
  });

  test('a listener with a limit holds that many unacked; its other copies go to the rest of its group', async () => {
    const b = await broker();
    const peer = await opened(b, 'shared');
    expect((await peer.request(sub(1, 'listen', { limit: 1 }))).error).toBeUndefined();
    expect((await peer.request(sub(2, 'consume', { prefetch: 100 }))).error).toBeUndefined(); // the barrier
    const ids = await sent(b, 3);
    await until(() => of(peer, 2).length === 3);
    expect(of(peer, 1).map((d) => d.messageId)).toEqual([ids[0]]);
    const first = of(peer, 1)[0]!;
    peer.sendJson({ type: 'ack', acks: [{ sub: 1, messageId: first.messageId, via: first.via, ok: true }] });
    await until(() => of(peer, 1).length === 2);
    expect(of(peer, 1)[1]!.messageId).toBe(ids[1]);
  });

  test('a paused listener is skipped by its group\'s round-robin: the other member gets every copy, none requeued', async () => {
    const b = await broker();
    const peer = await opened(b, 'shared');
    expect((await peer.request(sub(1, 'listen', { limit: 0 }))).error).toBeUndefined();
    expect((await peer.request(sub(2, 'listen'))).error).toBeUndefined();
    await sent(b, 4);
    await until(() => of(peer, 2).length === 4);
    expect(of(peer, 1)).toEqual([]);
    const unsubscribed = await peer.request({ type: 'unsubscribe', sub: 1 });
    expect(unsubscribed.error).toBeUndefined();
    expect(b.router.queues.get('jobs/v1')!.counters).toMatchObject({ requeued: 0 });
  });

  test('a flow for a sub the connection does not have is ignored, as an ack to it is: the connection stays', async () => {
    const b = await broker();
    const peer = await opened(b);
    peer.sendJson({ type: 'flow', sub: 99, limit: 3 });
    expect((await peer.request(sub(1, 'listen'))).error).toBeUndefined();
    expect(peer.isClosed).toBe(false);
  });
});

const badFlows: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
  ['a negative limit', { type: 'flow', sub: 1, limit: -1 }],
  ['a fractional limit', { type: 'flow', sub: 1, limit: 1.5 }],
  ['a limit past 2^53', { type: 'flow', sub: 1, limit: 2 ** 53 }],
  ['a limit as a string', { type: 'flow', sub: 1, limit: '2' }],
  ['a limit as a boolean', { type: 'flow', sub: 1, limit: true }],
  ['a limit as an object', { type: 'flow', sub: 1, limit: { valueOf: 2 } }],
  ['no limit', { type: 'flow', sub: 1 }],
  ['no sub', { type: 'flow', limit: 1 }],
  ['a sub as a string', { type: 'flow', sub: '1', limit: 1 }],
  ['a negative sub', { type: 'flow', sub: -1, limit: 1 }],
  ['a subscribe with a negative limit', { ...sub(1, 'consume'), req: 1, limit: -3 }],
  ['a subscribe with limit null', { ...sub(1, 'consume'), req: 1, limit: null }],
];

describe('hostile flow frames are E_PROTOCOL and close that connection only', () => {
  test.each(badFlows)('%s', async (_name, frame) => {
    const b = await broker();
    const bystander = await connect('bystander', b.hostSpec);
    const inbox = new Inbox();
    await bystander.consume('jobs/v1/*', { limit: 1 }, inbox.consumer).ready;
    const peer = await opened(b);
    expect((await peer.request(sub(1, 'consume', { limit: 0 }))).error).toBeUndefined();
    peer.sendJson(frame);
    const { error, closed } = await peer.refusal();
    expect(error.code).toBe('E_PROTOCOL');
    expect(closed.code).toBe(1002);
    await sent(b, 2);
    await inbox.waitFor(2);
    expect(inbox.items.every((i) => i.info!.nbRequeues === 0)).toBe(true);
    await bystander.disconnect();
  });
});
