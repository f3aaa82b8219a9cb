import { describe, expect, test } from 'vitest';
import type { WhiskerError } from '../../../src/protocol/errors.js';
import { whisker } from '../../support/broker-process.js';
import { clusterProcesses } from '../../support/cluster-processes.js';
import { nextMaster, offsets } from '../../support/election-cluster.js';
import { startEtcd } from '../../support/etcd.js';
import { connect, until } from '../../support/harness.js';

/**
 * A cluster of two mirror sets of two broker processes each, on a real etcd (SPEC §13, issue
 * 31): 8 queues placed over both, traffic on all; kill -9 of set b's master. Set a's delivery
 * must not pause; set b's queues fail over inside their set; nothing is lost anywhere.
 */
const QUEUES = Array.from({ length: 8 }, (_, i) => `q${i}/v1`);
const setOf = (i: number) => (i < 4 ? 'a' : 'b');

describe('a cluster of two mirror sets (real etcd, real broker processes)', () => {
  test('kill -9 of one set\'s master: the other set never pauses, 0 lost on both', async () => {
    const etcd = await startEtcd();
    const pins = { channels: Object.fromEntries(QUEUES.map((q, i) => [q, { set: setOf(i) }])) };
    const sets = await clusterProcesses(etcd.url, { a: ['a1', 'a2'], b: ['b1', 'b2'] }, () => pins);
    const [aNodes, bNodes] = [sets.get('a')!, sets.get('b')!];
    const masterB = await nextMaster(bNodes);
    await nextMaster(aNodes);
    await Promise.all([...aNodes, ...bNodes].map((n) => n.process!.waitFor(/registered in the cluster/, 0, 15_000)));
    await Promise.all([...aNodes, ...bNodes].filter((n) => n !== masterB).map((n) => n.process!.waitFor(/in step with the master|delivering: this broker acts as master/, 0, 15_000)));

    // the producer knows set a's brokers only, the consumer set b's only: both reach all 8 queues
    const producer = await connect('cluster-producer', aNodes.map((n) => n.spec), { sendTimeout: 30_000 });
    const consumer = await connect('cluster-consumer', bNodes.map((n) => n.spec), { dedupeWindow: 0 });
    const consumed = new Map<number, number>();
    const consumedAt: Array<{ set: string; at: number }> = [];
    const errors: WhiskerError[] = [];
    consumer.on('error', (e) => errors.push(e));
    producer.on('error', (e) => errors.push(e));
    await Promise.all(
      QUEUES.map(
        (q, i) =>
          consumer.consume(`${q}/x` as `${string}/${string}/${string}`, { prefetch: 10 }, (err, msg, done) => {
            if (err) throw err;
            const { seq } = msg as { seq: number };
            consumed.set(seq, (consumed.get(seq) ?? 0) + 1);
            consumedAt.push({ set: setOf(i), at: performance.now() });
            done!();
          }).ready,
      ),
    );

    // `whisker cluster status` on a broker of set a: both sets, a master each, 4 queues each
    const clusterStatus = async () => {
      const result = await whisker(['cluster', 'status', '-c', aNodes[0]!.configPath, '--json']);
      expect(result.stderr).toBe('');
      return JSON.parse(result.stdout) as { sets: Array<{ name: string; placements: number; brokers: Array<{ serviceId: string; isMaster: boolean; epoch: number | null }> }> };
    };
    const masters = (status: Awaited<ReturnType<typeof clusterStatus>>) => status.sets.map((set) => [set.name, set.placements, set.brokers.filter((b) => b.isMaster).map((b) => b.serviceId)]);
    await expect.poll(async () => masters(await clusterStatus()), { timeout: 10_000 }).toEqual([['a', 4, [expect.any(String)]], ['b', 4, [masterB.serviceId]]]);
    const text = await whisker(['cluster', 'status', '-c', aNodes[0]!.configPath]);
    expect(text.stdout).toMatch(/^b\s+b\d\s+127\.0\.0\.1:\d+@b\d\s+(master|slave)/m);
    expect(text.stdout).toContain('8 of at most 10000 queues placed');

    const owed = new Set<number>();
    const failed: string[] = [];
    const sends: Promise<void>[] = [];
    let seq = 0;
    const pacer = setInterval(() => {
      for (let k = 0; k < 4; k++) {
        const n = seq++;
        const i = n % QUEUES.length;
        sends.push(
          producer.send(`${QUEUES[i]}/x` as `${string}/${string}/${string}`, { seq: n }).then(
            () => void owed.add(n),
            (error: WhiskerError & { info?: { storedBy?: string[] } }) => void (error.info?.storedBy?.length ? owed.add(n) : failed.push(`${n} (${setOf(i)}): ${error.code}`)),
          ),
        );
      }
    }, 5);
    await until(() => seq >= 2_000, 30_000, '2,000 sent');
    const from = offsets(bNodes);
    masterB.process!.child.kill('SIGKILL');
    const killedAt = performance.now();
    await masterB.process!.exited;
    const nextB = await nextMaster(bNodes, from);
    await until(() => consumedAt.some((c) => c.set === 'b' && c.at > killedAt), 15_000, 'set b delivers again');
    await until(() => performance.now() - killedAt > 4_000, 10_000, 'traffic past the failover');
    clearInterval(pacer);
    await Promise.all(sends);
    await until(() => [...owed].every((n) => consumed.has(n)), 30_000, 'every stored message consumed');

    // set a's longest pause in deliveries from a second before the kill to 4 s after it
    const aTimes = consumedAt.filter((c) => c.set === 'a' && c.at > killedAt - 1_000 && c.at < killedAt + 4_000).map((c) => c.at);
    let longestGap = 0;
    for (let k = 1; k < aTimes.length; k++) longestGap = Math.max(longestGap, aTimes[k]! - aTimes[k - 1]!);
    const bResumedMs = Math.min(...consumedAt.filter((c) => c.set === 'b' && c.at > killedAt).map((c) => c.at)) - killedAt;
    const lost = [...owed].filter((n) => !consumed.has(n)).length;
    const duplicated = [...consumed.values()].reduce((sum, n) => sum + n - 1, 0);
    console.log(`cluster set b master killed: ${seq} sent, ${owed.size} stored, ${failed.length} failed, lost ${lost}, ${duplicated} delivered twice; set a longest gap ${longestGap.toFixed(0)} ms (${aTimes.length} deliveries); set b (${nextB.serviceId}) delivers again after ${bResumedMs.toFixed(0)} ms`);
    // set b's master is b2 now; the killed b1 left the map with its lease
    await expect.poll(async () => masters(await clusterStatus()), { timeout: 10_000 }).toEqual([['a', 4, [expect.any(String)]], ['b', 4, [nextB.serviceId]]]);
    expect(failed).toEqual([]);
    expect(lost).toBe(0);
    expect(longestGap).toBeLessThan(1_000);
    expect(errors.filter((e) => e.code === 'E_MOVED')).toEqual([]);
    await Promise.all([producer.disconnect(), consumer.disconnect()]);
  }, 120_000);
});
