import '../../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { afterEach, describe, expect, test } from 'vitest';
import { type Broker, startBroker } from '../../../src/server/start.js';
import { brokerConfig, connect, freePort, Inbox, tempDir, until } from '../../support/harness.js';

/**
 * A paused subscription on mirrors (docs/protocol.md#flow): the client sends `flow` to every
 * broker like an ack, so a slave holds the limit and, promoted, keeps the subscription paused.
 */
const running = new Set<Broker>();
afterEach(async () => {
  await Promise.all([...running].map((b) => b.stop().catch(() => undefined)));
  running.clear();
});

const configFor = (serviceId: string, port: number, dir: string, isMaster: boolean, peer: string) =>
  brokerConfig({ serviceId, isMaster, peers: [peer], socketServer: { host: '127.0.0.1', port }, requeueInterval: 5 }, dir);

describe('flow on mirrors', () => {
  test('paused on master and slave; the slave promoted delivers nothing to it until resume(), then each message once', async () => {
    const [pa, pb] = [await freePort(), await freePort()];
    const [da, db] = [tempDir(), tempDir()];
    const [sa, sb] = [`127.0.0.1:${pa}@a`, `127.0.0.1:${pb}@b`];
    const a = await startBroker(configFor('a', pa, da, true, sb));
    const b = await startBroker(configFor('b', pb, db, false, sa));
    running.add(a).add(b);
    await until(() => [a, b].every((m) => m.peers.status().every((p) => p.connected && p.role !== 'unknown')), 5000, 'peer links');

    const mq = await connect('worker', [sa, sb]);
    await until(() => [a, b].every((m) => [...m.sessions].some((s) => s.clientName === 'worker')), 5000, 'worker on both');
    const heard = new Inbox(); // the barrier: the same connection's listener copies
    await mq.listen('jobs/v1/*', heard.listener).ready;
    const taken = new Inbox();
    const handle = mq.consume('jobs/v1/*', { prefetch: 10 }, taken.consumer);
    await handle.ready;
    expect(handle.pause()).toBe(true);
    const limitOn = (m: Broker) => [...m.sessions].find((s) => s.clientName === 'worker')?.subscriptions.get(2)?.limit;
    await until(() => limitOn(a) === 0 && limitOn(b) === 0, 5000, 'the limit on both brokers');

    const producer = await connect('producer', [sa, sb]);
    for (let n = 1; n <= 3; n++) await producer.send('jobs/v1/a', { n });
    await heard.waitFor(3);
    expect(taken.items).toHaveLength(0);

    // the master goes; b is promoted by a reload and delivers what is left, but not to a paused handler
    const master = new Promise<void>((resolve) => mq.on('master', (serviceId) => serviceId === 'b' && resolve()));
    await a.stop();
    running.delete(a);
    b.reload(configFor('b', pb, db, true, sa));
    await master;
    await producer.send('jobs/v1/a', { n: 4 });
    await heard.waitFor(4);
    expect(taken.items).toHaveLength(0);

    handle.resume();
    await taken.waitFor(4);
    expect(taken.items.map((i) => (i.msg as { n: number }).n).sort()).toEqual([1, 2, 3, 4]);
    expect(b.router.queues.get('jobs/v1')!.counters).toMatchObject({ requeued: 0, deadLettered: 0, dropped: 0 });
    await Promise.all([mq.disconnect(), producer.disconnect()]);
  }, 30_000);
});
