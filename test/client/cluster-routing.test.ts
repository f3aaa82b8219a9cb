import { describe, expect, test } from 'vitest';
import { rendezvous } from '../../src/broker/cluster/rendezvous.js';
import { clusterBroker, clusterSpec, elected, placementsIn } from '../support/cluster.js';
import { startEtcd } from '../support/etcd.js';
import { clientConfig, Inbox, unconnected, until } from '../support/harness.js';

/**
 * A client routed through a cluster of mirror sets (SPEC §13, issue 31): given one broker of
 * set a, it reaches queues placed on set b, E_MOVED never reaches the application.
 */
describe('client routing in a cluster', () => {
  test('a client given only a broker of set a consumes and sends on a queue of set b; the master event names the set', async () => {
    const etcd = await startEtcd();
    const spec = clusterSpec(etcd.url);
    const pins = { channels: { 'far/v1': { set: 'b' }, 'near/v1': { set: 'a' } } };
    const a = await clusterBroker(spec, 'a', 'a1', pins);
    const b = await clusterBroker(spec, 'b', 'b1', pins);
    await Promise.all([elected(a), elected(b)]);
    await until(() => a.cluster!.sets.length === 2 && b.cluster!.sets.length === 2, 10_000, 'both sets registered');

    const c = unconnected();
    const errors: Error[] = [];
    const masters: Array<[string | null, string | null]> = [];
    c.on('error', (error) => errors.push(error));
    c.on('master', (serviceId, set) => masters.push([serviceId, set]));
    await c.connect(clientConfig('router', a.hostSpec));
    const far = new Inbox();
    const near = new Inbox();
    const farHandle = c.consume('far/v1/x', far.consumer);
    const nearHandle = c.consume('near/v1/x', near.consumer);
    await Promise.all([farHandle.ready, nearHandle.ready]);
    const sent = await Promise.all(Array.from({ length: 20 }, (_, i) => c.send(i % 2 ? 'far/v1/x' : 'near/v1/x', { i })));
    expect(sent).toHaveLength(20);
    await far.waitFor(10);
    await near.waitFor(10);
    expect(far.items.map((r) => (r.msg as { i: number }).i).sort((x, y) => x - y)).toEqual([1, 3, 5, 7, 9, 11, 13, 15, 17, 19]);
    expect(near.items).toHaveLength(10);

    // each queue lives on its set only
    expect(Object.fromEntries(await placementsIn(spec))).toEqual({ 'far/v1': 'b', 'near/v1': 'a' });
    expect([a.queues.has('far/v1'), b.queues.has('far/v1')]).toEqual([false, true]);
    expect([a.queues.has('near/v1'), b.queues.has('near/v1')]).toEqual([true, false]);
    // acks reached set b: nothing left in flight or waiting there
    await until(() => b.queues.get('far/v1')!.inFlightCount === 0 && b.queues.get('far/v1')!.depth === 0, 5000, 'acks on b');
    expect(errors).toEqual([]);
    expect(masters).toContainEqual(['a1', 'a']);
    expect(masters).toContainEqual(['b1', 'b']);
    await c.disconnect();
  }, 60_000);
});

describe('client routing in a cluster: ids added later', () => {
  test('a listen with no id yet, then addId on a queue of set b: the subscription moves to b, the callback gets no E_MOVED', async () => {
    const etcd = await startEtcd();
    const spec = clusterSpec(etcd.url);
    const pins = { channels: { 'later/v1': { set: 'b' } } };
    const a = await clusterBroker(spec, 'a', 'a1', pins);
    const b = await clusterBroker(spec, 'b', 'b1', pins);
    await Promise.all([elected(a), elected(b)]);
    await until(() => a.cluster!.sets.length === 2, 10_000, 'both sets registered');
    const c = unconnected();
    await c.connect(clientConfig('adder', a.hostSpec));
    const inbox = new Inbox();
    const handle = c.listen({ endpoint: 'later', version: 'v1', ids: [] }, inbox.listener);
    await handle.ready;
    await new Promise<void>((resolve, reject) => handle.addId('x', (err) => (err ? reject(err) : resolve())));
    await c.send('later/v1/x', { n: 1 });
    await inbox.waitFor(1);
    expect([a.queues.has('later/v1'), b.queues.has('later/v1')]).toEqual([false, true]);
    await c.disconnect();
  }, 60_000);
});

describe('client routing in a cluster: dead letters', () => {
  test('a dead-letter queue is placed with its source queue, and its dead letters reach a client of the other set', async () => {
    // a dead-letter queue name that rendezvous hashing alone would put on set a
    let dead = '';
    for (let i = 0; !dead; i++) if (rendezvous(`dead${i}/v1`, [{ name: 'a', weight: 1 }, { name: 'b', weight: 1 }]) === 'a') dead = `dead${i}/v1`;
    const etcd = await startEtcd();
    const spec = clusterSpec(etcd.url);
    const config = { channels: { 'work/v1': { set: 'b', deadLetter: `${dead}/x`, requeueLimit: 1 } } };
    const a = await clusterBroker(spec, 'a', 'a1', config);
    const b = await clusterBroker(spec, 'b', 'b1', config);
    await Promise.all([elected(a), elected(b)]);
    await until(() => a.cluster!.sets.length === 2 && b.cluster!.sets.length === 2, 10_000, 'both sets registered');
    const c = unconnected();
    await c.connect(clientConfig('dead-letters', a.hostSpec));
    await c.consume('work/v1/x', (err, _msg, done) => {
      if (err) throw err;
      done!(false);
    }).ready;
    const letters = new Inbox();
    await c.consume(`${dead}/x` as `${string}/${string}/${string}`, letters.consumer).ready;
    expect(Object.fromEntries(await placementsIn(spec))).toEqual({ 'work/v1': 'b', [dead]: 'b' });
    await c.send('work/v1/x', { job: 1 });
    const [letter] = await letters.waitFor(1, 10_000);
    expect(letter!.msg).toMatchObject({ channel: 'work/v1/x', nbDeliveries: 1, data: { job: 1 } });
    await c.disconnect();
  }, 60_000);
});

describe('client routing in a cluster: replays', () => {
  test('replay and listen({ since }) made before the map arrived, of a queue of set b: E_MOVED is followed, the history comes from b', async () => {
    const etcd = await startEtcd();
    const spec = clusterSpec(etcd.url);
    const config = { channels: { 'hist/v1': { set: 'b', retention: { seconds: 3600 } } } };
    const a = await clusterBroker(spec, 'a', 'a1', config);
    const b = await clusterBroker(spec, 'b', 'b1', config);
    await Promise.all([elected(a), elected(b)]);
    await until(() => a.cluster!.sets.length === 2 && b.cluster!.sets.length === 2, 10_000, 'both sets registered');
    const producer = unconnected();
    await producer.connect(clientConfig('hist-producer', b.hostSpec));
    for (let n = 0; n < 5; n++) await producer.send('hist/v1/x', { n });
    await until(() => a.cluster!.placements === 1, 10_000, 'set a knows the placement');

    // called before connect() resolved: the client has no map yet and asks set a, which answers E_MOVED
    const c = unconnected();
    const errors: Error[] = [];
    c.on('error', (error) => errors.push(error));
    const connecting = c.connect(clientConfig('hist-reader', a.hostSpec));
    const replayed: number[] = [];
    const done = c.replay('hist/v1/x', { since: 0 }, (_err, msg) => void replayed.push((msg as { n: number }).n)).done;
    const listened: number[] = [];
    const listen = c.listen('hist/v1/x', { since: 0 }, (_err, msg) => void listened.push((msg as { n: number }).n));
    await connecting;
    expect(await done).toBe(5);
    expect(replayed).toEqual([0, 1, 2, 3, 4]);
    await listen.ready;
    await until(() => listened.length >= 5, 10_000, `the listen's history (${listened.length})`);
    await producer.send('hist/v1/x', { n: 5 });
    await until(() => listened.includes(5), 10_000, 'a live message after the seam');
    expect(listened).toEqual([0, 1, 2, 3, 4, 5]);
    expect(errors).toEqual([]);
    await Promise.all([c.disconnect(), producer.disconnect()]);
  }, 60_000);
});
