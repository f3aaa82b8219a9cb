import { Etcd3 } from 'etcd3';
import { describe, expect, test } from 'vitest';
import { CONSUMERS, electionCluster, held, nextMaster, offsets, PER_TICK, PREFETCH } from '../../support/election-cluster.js';
import { startEtcd } from '../../support/etcd.js';
import { freePort, until } from '../../support/harness.js';
import { parseMetrics, valueOf } from '../../support/prom.js';
import { Traffic } from '../../support/traffic.js';

const LEASE_TTL = 6;

/**
 * Issue 27's nemesis at load 25: a master whose event loop stalls past its fence (lease/2) fences
 * itself, then wins the election again under a new epoch. Its slaves were in step, their links
 * up: they must be in step again at once, its feed resumed (docs/protocol.md#peers), not after a
 * full sync (110 s to over 3 min at that load, during which no slave may campaign).
 *
 * Real etcd, three real broker processes, traffic with acks. The master is stopped (SIGSTOP) 4 s:
 * past its fence (3 s), within its lease (6 s). Meanwhile the test deletes the master key and
 * rewrites `last` in one etcd transaction: the slaves are then not in step with the last master
 * (as at load 25, where their sync never ended) and only the stopped broker may campaign; it
 * does when it resumes, and wins a new epoch.
 */
describe('the same master re-elected (issue 27)', () => {
  test('slaves in step with a master that was fenced and re-elected under a new epoch resume its feed without a sync: 0 lost, no duplicate beyond those in flight', async () => {
    const etcd = await startEtcd();
    const prefix = `/whisker/test-resume-${process.pid}-${Date.now()}`;
    const management = new Map<string, number>();
    for (const serviceId of ['a', 'b', 'c']) management.set(serviceId, await freePort());
    const nodes = await electionCluster([etcd.url], ['a', 'b', 'c'], (serviceId) => ({
      election: { etcd: { hosts: [etcd.url] }, prefix, leaseTtl: LEASE_TTL },
      heartbeatTimeout: 20,
      management: { port: management.get(serviceId) },
    }));
    const metrics = async (serviceId: string) => parseMetrics(await (await fetch(`http://127.0.0.1:${management.get(serviceId)}/metrics`)).text());
    const master = await nextMaster(nodes);
    const slaves = nodes.filter((n) => n !== master);
    await Promise.all(slaves.map((n) => n.process!.waitFor(/in step with the master/, 0, 15_000)));
    const traffic = await Traffic.start(nodes.map((n) => n.spec), { consumers: CONSUMERS, prefetch: PREFETCH });
    traffic.run(PER_TICK);
    await traffic.sendMore(1_000);

    const client = new Etcd3({ hosts: [etcd.url] });
    const from = offsets(nodes);
    master.process!.child.kill('SIGSTOP');
    const stoppedAt = performance.now();
    // the lease stays (the stop is shorter than it); the key goes and `last` gets a new revision
    const result = await client.if(`${prefix}/master`, 'Value', '==', master.serviceId).then(client.delete().key(`${prefix}/master`), client.put(`${prefix}/last`).value(master.serviceId)).commit();
    expect(result.succeeded).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, stoppedAt + 4_000 - performance.now())));
    master.process!.child.kill('SIGCONT');
    const resumedAt = performance.now();
    await master.process!.waitFor(/not delivering: this broker is no longer the elected master/, from.get(master), 10_000);
    await master.process!.waitFor(/elected master through etcd/, from.get(master), 15_000);
    // in step again within a few seconds, whatever the way
    await until(() => slaves.every((n) => /"in step with the master/.test(n.process!.output().slice(from.get(n)))), 10_000, 'both slaves in step with the re-elected master');
    const inStepMs = performance.now() - resumedAt;
    const [before, after] = [master.process!.output().slice(0, from.get(master)), master.process!.output().slice(from.get(master))];
    const epochOf = (text: string) => Number(/"epoch":(\d+)/.exec(text.split('\n').filter((line) => line.includes('elected master through etcd')).pop() ?? '')?.[1]);
    await traffic.sendMore(1_000);
    const { sent, lost, duplicated } = await traffic.settle();
    let queued: number[] = [];
    for (const deadline = performance.now() + 15_000; performance.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 250))) {
      queued = await Promise.all(nodes.map(held));
      if (queued.every((n) => n === 0)) break;
    }
    // per producer, the first deliveries keep its order but for what was in flight
    const firsts = [...traffic.consumedAt].sort((x, y) => x[1] - y[1]).map(([seq]) => seq);
    let highest = -1;
    let outOfOrder = 0;
    for (const seq of firsts) {
      if (seq < highest - traffic.inFlightWindow) outOfOrder++;
      highest = Math.max(highest, seq);
    }
    // what an operator reads on each slave: one sync (at start), one resume
    const counts = await Promise.all(slaves.map(async (n) => {
      const m = await metrics(n.serviceId);
      return `${valueOf(m, 'whisker_peer_syncs_total', { peer: master.serviceId })}/${valueOf(m, 'whisker_peer_resumes_total', { peer: master.serviceId })}`;
    }));
    const resumedLines = slaves.map((n) => (n.process!.output().slice(from.get(n)).match(/in step with the master again/g) ?? []).length);
    const syncedLines = slaves.map((n) => (n.process!.output().slice(from.get(n)).match(/"in step with the master"/g) ?? []).length);
    console.log(
      `same master re-elected: epoch ${epochOf(before)} -> ${epochOf(after)}, slaves in step again ${inStepMs.toFixed(0)} ms after SIGCONT (resumed ${resumedLines.join('/')}, full syncs ${syncedLines.join('/')}; syncs/resumes metrics ${counts.join(' ')}); ` +
        `${sent} sent, lost ${lost}, ${duplicated} delivered twice (window ${traffic.inFlightWindow}), ${outOfOrder} out of order, held ${queued.join('/')}`,
    );
    client.close();
    await traffic.close();
    expect(epochOf(after)).toBeGreaterThan(epochOf(before));
    // no full sync: each slave resumed the feed
    expect(syncedLines).toEqual([0, 0]);
    expect(resumedLines).toEqual([1, 1]);
    expect(counts).toEqual(['1/1', '1/1']);
    expect(lost).toBe(0);
    expect(duplicated).toBeLessThanOrEqual(traffic.inFlightWindow);
    expect(outOfOrder).toBe(0);
    expect(queued, 'messages held on a, b, c after every send was consumed').toEqual([0, 0, 0]);
  }, 60_000);
});
