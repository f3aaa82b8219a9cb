import { describe, expect, test } from 'vitest';
import type { WhiskerError } from '../../../src/protocol/errors.js';
import { clusterProcesses } from '../../support/cluster-processes.js';
import { nextMaster, offsets } from '../../support/election-cluster.js';
import { startEtcd } from '../../support/etcd.js';
import { connect, Inbox } from '../../support/harness.js';

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

describe('a client given brokers of one set (real etcd, real broker processes)', () => {
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
});
