import { describe, expect, test } from 'vitest';
import type { WhiskerError } from '../../../src/protocol/errors.js';
import { clusterProcesses } from '../../support/cluster-processes.js';
import { clusterBroker, clusterSpec, elected } from '../../support/cluster.js';
import { nextMaster, offsets } from '../../support/election-cluster.js';
import { startEtcd } from '../../support/etcd.js';
import { connect, freePort, Inbox, until } from '../../support/harness.js';

/**
 * SPEC §13: a client may be given any brokers of the cluster; inside the set of a queue it keeps
 * §9's rule (everything to every broker of the set, only the master delivers). For the set of the
 * brokers it was given, that set's brokers come from the map too, not only from `hosts`
 * (issue 31, attacks-31 3b and 3c). A cluster of one set of two broker processes, real etcd.
 */
const within = <T>(promise: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms).unref())]);

const outcome = (sent: Promise<unknown>): Promise<string> =>
  sent.then(
    () => 'ok',
    (error: WhiskerError & { info?: { storedBy?: string[] } }) => `${error.code} storedBy ${JSON.stringify(error.info?.storedBy ?? [])}`,
  );

async function setOfTwo() {
  const etcd = await startEtcd();
  const nodes = (await clusterProcesses(etcd.url, { b: ['b1', 'b2'] })).get('b')!;
  const master = await nextMaster(nodes);
  await Promise.all(nodes.map((n) => n.process!.waitFor(/registered in the cluster/, 0, 15_000)));
  return { nodes, master, slave: nodes.find((n) => n !== master)! };
}

describe('a client given brokers of one set (real etcd; broker processes, an in-process broker for the last)', () => {
  test('given only the slave of the set that owns the queue: listen is ready, the send is answered, the message delivered', async () => {
    const { slave } = await setOfTwo();
    const c = await connect('seed-slave', slave.spec, { sendTimeout: 8_000 });
    const inbox = new Inbox();
    const handle = c.listen('own/v1/x', inbox.listener);
    // before the fix: never ready, and the send ended E_NO_MASTER with storedBy the slave
    await within(handle.ready, 8_000, 'listen ready');
    expect(await outcome(c.send('own/v1/x', { n: 1 }))).toBe('ok');
    await inbox.waitFor(1);
    expect(inbox.items.map((r) => r.msg)).toEqual([{ n: 1 }]);
  }, 60_000);

  test('given only the master: after its kill -9 the client goes on with the master elected next (the map names it)', async () => {
    const { nodes, master } = await setOfTwo();
    const c = await connect('seed-master', master.spec, { sendTimeout: 12_000 });
    const masters: Array<[string | null, string | null]> = [];
    c.on('master', (serviceId, set) => masters.push([serviceId, set]));
    const inbox = new Inbox();
    await c.consume('own/v1/*', inbox.consumer).ready;
    expect(await outcome(c.send('own/v1/x', { n: 0 }))).toBe('ok');
    await inbox.waitFor(1);

    const from = offsets(nodes);
    master.process!.child.kill('SIGKILL');
    await master.process!.exited;
    // sent while the set has no master: answered by the next one (before the fix: E_NO_MASTER at sendTimeout)
    const sends = Array.from({ length: 5 }, (_, i) => outcome(c.send('own/v1/x', { n: i + 1 })));
    const next = await nextMaster(nodes, from);
    expect(await Promise.all(sends)).toEqual(Array(5).fill('ok'));
    await inbox.waitFor(6, 10_000);
    expect(new Set(inbox.items.map((r) => (r.msg as { n: number }).n))).toEqual(new Set([0, 1, 2, 3, 4, 5]));
    expect(masters.at(-1)).toEqual([next.serviceId, 'b']);
  }, 60_000);

  test('a broker given under another host string than it advertises is dialed once: one session, one subscription there', async () => {
    const etcd = await startEtcd();
    const spec = clusterSpec(etcd.url);
    const port = await freePort();
    const b1 = await clusterBroker(spec, 'b', 'b1', { socketServer: { host: '127.0.0.1', port }, cluster: { prefix: spec.prefix, set: 'b', advertise: `127.0.0.1:${port}@b1` } });
    await elected(b1);
    await until(() => b1.cluster!.sets.length === 1, 10_000, 'set registered');
    // `ws://127.0.0.1:PORT/` is the same broker as the advertised `127.0.0.1:PORT`, written otherwise
    const c = await connect('seed-twin', `ws://127.0.0.1:${port}/@b1`);
    const inbox = new Inbox();
    await c.consume('twin/v1/*', inbox.consumer).ready;
    const sessions = () => [...b1.sessions].filter((s) => s.isReady && s.clientName === 'seed-twin');
    // the map's connection to b1 is made and then closed: wait past it
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(sessions().length).toBe(1);
    expect(sessions()[0]!.subscriptions.size).toBe(1);
    for (let i = 0; i < 10; i++) await c.send('twin/v1/x', { i });
    await inbox.waitFor(10);
    expect(inbox.items.map((r) => (r.msg as { i: number }).i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  }, 60_000);
});
