import { describe, expect, test } from 'vitest';
import type { WhiskerError } from '../../../src/protocol/errors.js';
import { clusterBroker, clusterSpec, elected, placementsIn } from '../../support/cluster.js';
import { clusterProcesses } from '../../support/cluster-processes.js';
import { nextMaster, offsets } from '../../support/election-cluster.js';
import { startEtcd } from '../../support/etcd.js';
import { connect, until } from '../../support/harness.js';

/**
 * `limits.maxPlacements` is a bound on the cluster, with etcd the authority (SPEC §13, issue 31
 * §2, attacks-31 5 "two"): brokers placing at once do not pass it together, and a refused send
 * gets E_LIMIT, not sendTimeout's E_NO_MASTER.
 */
const codeOf = (sent: Promise<unknown>): Promise<string> => sent.then(() => 'ok', (error: WhiskerError) => error.code);

function tally(codes: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const code of codes) counts[code] = (counts[code] ?? 0) + 1;
  return counts;
}

describe('the placement bound across brokers (real etcd)', () => {
  test('two brokers of two sets placing 300 new queues each at once stop at the bound together: 40 placed, 40 sends ok, the rest E_LIMIT', async () => {
    const etcd = await startEtcd();
    const spec = clusterSpec(etcd.url);
    // a 15 s lease: the brokers share this process with 600 sends; the subject is the bound, not a lease lapse
    const config = (set: string) => ({ limits: { maxPlacements: 40 }, election: { etcd: { hosts: [spec.etcd] }, prefix: `${spec.prefix}-sets/${set}`, leaseTtl: 15 } });
    const a = await clusterBroker(spec, 'a', 'a1', config('a'));
    const b = await clusterBroker(spec, 'b', 'b1', config('b'));
    await Promise.all([elected(a), elected(b)]);
    await until(() => a.cluster!.sets.length === 2 && b.cluster!.sets.length === 2, 10_000, 'both sets registered');
    const [ca, cb] = await Promise.all([connect('bound-a', a.hostSpec, { sendTimeout: 20_000 }), connect('bound-b', b.hostSpec, { sendTimeout: 20_000 })]);
    // each client asks its own 300 queues, all at once, through its own set's broker
    const asked = [
      ...Array.from({ length: 300 }, (_, i) => codeOf(ca.send(`fromA${i}/v1/x`, { i }))),
      ...Array.from({ length: 300 }, (_, i) => codeOf(cb.send(`fromB${i}/v1/x`, { i }))),
    ];
    const codes = tally(await Promise.all(asked));
    const placed = await placementsIn(spec);
    console.log(`placement bound 40, two brokers at once: ${JSON.stringify(codes)}; ${placed.size} placed in etcd`);
    // before the fix: each broker counted from its own cache and placed 40 (80 in all)
    expect(placed.size).toBe(40);
    expect(codes).toEqual({ ok: 40, E_LIMIT: 560 });
    await until(() => a.cluster!.placements === 40 && b.cluster!.placements === 40, 5_000, 'both caches hold the 40');
    expect(a.queues.size + b.queues.size).toBe(40);
  }, 60_000);

  test('a send refused E_LIMIT by a slave (its set\'s master just died) gets E_LIMIT from it once elected, not E_NO_MASTER', async () => {
    const etcd = await startEtcd();
    const nodes = (await clusterProcesses(etcd.url, { a: ['a1', 'a2'] }, () => ({ limits: { maxPlacements: 1 } }))).get('a')!;
    const master = await nextMaster(nodes);
    await Promise.all(nodes.map((n) => n.process!.waitFor(/registered in the cluster/, 0, 15_000)));
    const c = await connect('bound-failover', nodes.map((n) => n.spec), { sendTimeout: 20_000 });
    expect(await codeOf(c.send('first/v1/x', {}))).toBe('ok');

    const from = offsets(nodes);
    master.process!.child.kill('SIGKILL');
    await master.process!.exited;
    // the slave answers at once (the bound is reached), as a slave: that answer does not count
    const sent = codeOf(c.send('second/v1/x', {}));
    await nextMaster(nodes, from);
    const started = Date.now();
    // before the fix: nobody asked the new master again; E_NO_MASTER at sendTimeout (20 s)
    expect(await sent).toBe('E_LIMIT');
    console.log(`E_LIMIT ${Date.now() - started} ms after the new master's log line`);
  }, 60_000);
});
