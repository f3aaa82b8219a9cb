import { describe, expect, test } from 'vitest';
import type { WhiskerError } from '../../../src/protocol/errors.js';
import { clusterBroker, clusterSpec, elected, placementsIn } from '../../support/cluster.js';
import { startEtcd } from '../../support/etcd.js';
import { connect, until } from '../../support/harness.js';

/** etcd restarted under traffic (SPEC §13, issue 31): nothing lost, and the map is followed again afterwards */
describe('cluster: etcd restarted under traffic', () => {
  test('sends to queues of both sets all arrive; after the restart a new placement reaches every broker', async () => {
    const etcd = await startEtcd();
    const spec = clusterSpec(etcd.url);
    const queues = ['r0/v1', 'r1/v1', 'r2/v1', 'r3/v1'];
    const pins = { channels: { ...Object.fromEntries(queues.map((q, i) => [q, { set: i < 2 ? 'a' : 'b' }])), 'after/v1': { set: 'a' } } };
    const a = await clusterBroker(spec, 'a', 'a1', pins);
    const b = await clusterBroker(spec, 'b', 'b1', pins);
    await Promise.all([elected(a), elected(b)]);
    await until(() => a.cluster!.sets.length === 2 && b.cluster!.sets.length === 2, 10_000, 'both sets registered');
    const producer = await connect('restart-producer', a.hostSpec, { sendTimeout: 60_000 });
    const consumer = await connect('restart-consumer', b.hostSpec);
    const consumed = new Set<number>();
    await Promise.all(queues.map((q) => consumer.consume(`${q}/x` as `${string}/${string}/${string}`, (err, msg, done) => {
      if (err) throw err;
      consumed.add((msg as { n: number }).n);
      done!();
    }).ready));
    const sends: Promise<unknown>[] = [];
    const failed: string[] = [];
    let n = 0;
    const pacer = setInterval(() => {
      const k = n++;
      sends.push(producer.send(`${queues[k % 4]}/x` as `${string}/${string}/${string}`, { n: k }).catch((e: WhiskerError) => failed.push(`${k}: ${e.code}`)));
    }, 5);
    await until(() => n >= 300, 10_000, '300 sent');
    await etcd.restart();
    await until(() => a.isMaster && b.isMaster, 30_000, 'both sets deliver again');
    const restartedAt = n;
    await until(() => n >= restartedAt + 300, 10_000, '300 more sent');
    clearInterval(pacer);
    await Promise.all(sends);
    expect(failed).toEqual([]);
    await until(() => consumed.size === n, 30_000, `every message consumed (${consumed.size} of ${n})`);

    // the watches resumed: a placement made now by a (for a queue of a) reaches b's cache through its watch alone
    await producer.send('after/v1/x', { n: -1 });
    expect((await placementsIn(spec)).get('after/v1')).toBe('a');
    await until(() => a.cluster!.placements === 5 && b.cluster!.placements === 5, 10_000, 'both caches follow after the restart');
    console.log(`etcd restart under traffic: ${n} sent, ${consumed.size} consumed, 0 failed`);
    await Promise.all([producer.disconnect(), consumer.disconnect()]);
  }, 120_000);
});
