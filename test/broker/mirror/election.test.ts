import { describe, expect, test } from 'vitest';
import { startProcess } from '../../support/broker-process.js';
import { electionCluster, held, LEASE_TTL, nextMaster, offsets, status } from '../../support/election-cluster.js';
import { startEtcd, startEtcdCluster } from '../../support/etcd.js';
import { Traffic } from '../../support/traffic.js';

/**
 * Automatic failover (SPEC §9, issue 14) with real broker processes and a real etcd: nobody is
 * configured master, etcd elects one; a steady producer, two consumers that ack. Each test
 * prints sent / lost / duplicated / time to the new master's first delivery.
 */
const CONSUMERS = 2;
const PREFETCH = 10;
const PER_TICK = 5; // every 5 ms: about 1,000 messages/s
/** a new master delivers within the lease TTL (the old key expires) + 2 s (issue 14) */
const FAILOVER_BOUND_MS = LEASE_TTL * 1000 + 2000;
const KILLS = 4;

describe('automatic failover (real etcd, real broker processes)', () => {
  // four: with three brokers, at least one of the masters killed was a broker killed before and
  // restarted as a slave (five, until 2026-12-07, checked nothing more and took ~11 s longer)
  test(`kill -9 of the master, ${KILLS} times in a row: the others elect a new one, nothing lost`, async () => {
    const etcd = await startEtcd();
    const nodes = await electionCluster([etcd.url]);
    let master = await nextMaster(nodes);
    await Promise.all(nodes.filter((n) => n !== master).map((n) => n.process!.waitFor(/in step with the master/)));
    for (const node of nodes) expect(node.process!.output()).toContain('isMaster in the file is not used');
    const traffic = await Traffic.start(nodes.map((n) => n.spec), { consumers: CONSUMERS, prefetch: PREFETCH });
    traffic.run(PER_TICK);

    const failoverMs: number[] = [];
    for (let cycle = 0; cycle < KILLS; cycle++) {
      await traffic.sendMore(1_500);
      const from = offsets(nodes);
      master.process!.child.kill('SIGKILL');
      const killedAt = performance.now();
      await master.process!.exited;
      const next = await nextMaster(nodes, from);
      failoverMs.push(await traffic.firstConsumedAfter(killedAt, 15_000, `cycle ${cycle}: a delivery from the new master`).catch((error: Error) => {
        throw new Error(`${error.message}\n${nodes.map((n) => `--- ${n.serviceId}\n${n.process!.output().slice(-4000)}`).join('\n')}`);
      }));
      // its log said it delivers as master; its status says so too (polled: under load a 2 s lease
      // can lapse for a moment, and the status then reads etcd-unreachable until it is master again)
      await expect.poll(async () => (await status(next)).election, { timeout: 15_000, interval: 250 }).toMatchObject({ phase: 'master', leader: next.serviceId });

      // the killed broker comes back as a slave and catches up with the new master
      const restartedAt = performance.now();
      master.process = await startProcess(master.configPath, { startTimeoutMs: 30_000 });
      await master.process.waitFor(/in step with the master/, 0, 15_000);
      console.log(`cycle ${cycle}: ${master.serviceId} killed, ${next.serviceId} delivers after ${failoverMs.at(-1)!.toFixed(0)} ms; ${master.serviceId} back in step in ${(performance.now() - restartedAt).toFixed(0)} ms`);
      master = next;
    }
    const { sent, lost, duplicated } = await traffic.settle();
    console.log(
      `election kill -9 x${KILLS}: ${sent} sent, ${traffic.succeeded.size} succeeded, ${traffic.storedBySlave.size} E_NO_MASTER but stored, ${traffic.failed.length} failed, ` +
        `lost ${lost}, ${duplicated} delivered twice (in-flight window ${traffic.inFlightWindow} per kill), ${traffic.stale} stale frames ignored, ` +
        `kill to first delivery ${failoverMs.map((ms) => ms.toFixed(0)).join(' / ')} ms (bound ${FAILOVER_BOUND_MS})`,
    );
    expect(traffic.failed).toEqual([]);
    expect(lost).toBe(0);
    expect(duplicated).toBeLessThanOrEqual(KILLS * traffic.inFlightWindow);
    for (const ms of failoverMs) expect(ms).toBeLessThanOrEqual(FAILOVER_BOUND_MS);
    for (const node of nodes) await expect.poll(() => held(node), { timeout: 10_000, interval: 200 }).toBe(0);
  }, 150_000);

  test('three etcd members: one member and the master killed at once, a new master is elected, nothing lost', async () => {
    const members = await startEtcdCluster(3);
    const nodes = await electionCluster(members.map((m) => m.url));
    const master = await nextMaster(nodes);
    await Promise.all(nodes.filter((n) => n !== master).map((n) => n.process!.waitFor(/in step with the master/, 0, 15_000)));
    const traffic = await Traffic.start(nodes.map((n) => n.spec), { consumers: CONSUMERS, prefetch: PREFETCH });
    traffic.run(PER_TICK);
    await traffic.sendMore(1_500);
    const from = offsets(nodes);
    master.process!.child.kill('SIGKILL');
    const killedAt = performance.now();
    await members[0]!.kill(); // the brokers' first host: they have to use the others
    const next = await nextMaster(nodes, from);
    const failoverMs = await traffic.firstConsumedAfter(killedAt, 15_000, 'a delivery from the new master');
    await traffic.sendMore(1_500);
    const { sent, lost, duplicated } = await traffic.settle();
    console.log(`election 3 etcd members, one killed with the master: ${sent} sent, lost ${lost}, ${duplicated} delivered twice, kill to first delivery by ${next.serviceId} ${failoverMs.toFixed(0)} ms`);
    expect(lost).toBe(0);
    expect(duplicated).toBeLessThanOrEqual(traffic.inFlightWindow);
    // the brokers' etcd client may first try the dead member (6,129 ms at load 15, 6,944 at load 25 seen)
    expect(failoverMs).toBeLessThanOrEqual(FAILOVER_BOUND_MS + 3_000);
  }, 90_000);
});
