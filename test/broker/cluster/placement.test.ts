import { describe, expect, test } from 'vitest';
import { clusterBroker, clusterSpec, elected, placementsIn } from '../../support/cluster.js';
import { startEtcd } from '../../support/etcd.js';
import { connect, Inbox, until } from '../../support/harness.js';

/** placement of queues on the sets of a cluster (SPEC §13, issue 31), real etcd, in-process brokers */
describe('cluster placement', () => {
  test('two brokers of two sets racing to place 100 new queues agree: one set per queue, in etcd and in both caches', async () => {
    const etcd = await startEtcd();
    const spec = clusterSpec(etcd.url);
    const queues = Array.from({ length: 100 }, (_, i) => `race${i}/v1`);
    // each broker would place every one on its own set (pins that disagree): etcd's create-if-absent decides
    const pins = (set: string) => ({ channels: Object.fromEntries(queues.map((q) => [q, { set }])) });
    const a = await clusterBroker(spec, 'a', 'a1', pins('a'));
    const b = await clusterBroker(spec, 'b', 'b1', pins('b'));
    await Promise.all([elected(a), elected(b)]);
    await until(() => a.cluster!.sets.length === 2 && b.cluster!.sets.length === 2, 10_000, 'both sets registered');
    const [ca, cb] = await Promise.all([connect('racer-a', a.hostSpec), connect('racer-b', b.hostSpec)]);
    const sends = queues.flatMap((_, i) => [ca.send(`race${i}/v1/x`, { from: 'a' }), cb.send(`race${i}/v1/x`, { from: 'b' })]);
    await Promise.allSettled(sends);

    const placed = await placementsIn(spec);
    expect(placed.size).toBe(100);
    const onA = queues.filter((q) => placed.get(q) === 'a');
    const onB = queues.filter((q) => placed.get(q) === 'b');
    expect(onA.length + onB.length).toBe(100);
    console.log(`placement race: ${onA.length} queues won by a, ${onB.length} by b`);
    // each broker holds only the queues of its own set
    for (const queue of onA) expect([a.queues.has(queue), b.queues.has(queue)]).toEqual([true, false]);
    for (const queue of onB) expect([a.queues.has(queue), b.queues.has(queue)]).toEqual([false, true]);
    await until(() => a.cluster!.placements === 100 && b.cluster!.placements === 100, 5000, 'both caches hold the 100 placements');
    expect(a.cluster!.sets.map((s) => s.placements)).toEqual([onA.length, onB.length]);
    expect(b.cluster!.sets.map((s) => s.placements)).toEqual([onA.length, onB.length]);
    await Promise.all([ca.disconnect(), cb.disconnect()]);
  }, 60_000);

  test('10,000 placements asked by one client stop at limits.maxPlacements: E_LIMIT, nothing stored past it', async () => {
    const etcd = await startEtcd();
    const spec = clusterSpec(etcd.url);
    // the broker and the client's 10,000 sends share this process: a 15 s lease, since at load 15-50
    // the 5 s one lapsed while they ran (9,000 sends answered E_NO_MASTER), which is not this test's subject
    const a = await clusterBroker(spec, 'a', 'a1', {
      limits: { maxPlacements: 50, maxQueues: 100_000 },
      election: { etcd: { hosts: [spec.etcd] }, prefix: `${spec.prefix}-sets/a`, leaseTtl: 15 },
    });
    await elected(a);
    await until(() => a.cluster!.sets.length === 1, 10_000, 'set registered');
    const c = await connect('placer', a.hostSpec, { maxBufferedMessages: 20_000, sendTimeout: 60_000 });
    const outcomes = await Promise.allSettled(Array.from({ length: 10_000 }, (_, i) => c.send(`many${i}/v1/x`, { i })));
    const codes = new Map<string, number>();
    for (const o of outcomes) {
      const code = o.status === 'fulfilled' ? 'ok' : (o.reason as { code: string }).code;
      codes.set(code, (codes.get(code) ?? 0) + 1);
    }
    expect(Object.fromEntries(codes)).toEqual({ ok: 50, E_LIMIT: 9_950 });
    expect((await placementsIn(spec)).size).toBe(50);
    expect(a.queues.size).toBe(50);
    await c.disconnect();
  }, 120_000);

  test('an idle queue\'s placement goes with it: the bound frees up', async () => {
    const etcd = await startEtcd();
    const spec = clusterSpec(etcd.url);
    const a = await clusterBroker(spec, 'a', 'a1', { idleQueueTimeout: 0.5, limits: { maxPlacements: 5 } });
    await elected(a);
    await until(() => a.cluster!.sets.length === 1, 10_000, 'set registered');
    const c = await connect('idler', a.hostSpec);
    for (let i = 0; i < 5; i++) await c.send(`idle${i}/v1/x`, { i });
    await expect(c.send('idle5/v1/x', {})).rejects.toMatchObject({ code: 'E_LIMIT' });
    // consumed and acked: the queues are empty, nobody subscribes, they are forgotten
    for (let i = 0; i < 5; i++) {
      const inbox = new Inbox();
      const handle = c.consume(`idle${i}/v1/x`, inbox.consumer);
      await inbox.waitFor(1);
      await handle.close();
    }
    await until(() => a.queues.size === 0, 10_000, 'idle queues forgotten');
    await expect.poll(async () => (await placementsIn(spec)).size, { timeout: 5_000 }).toBe(0);
    await until(() => a.cluster!.placements === 0, 5_000, 'the cache follows');
    await c.send('idle5/v1/x', {});
    expect(Object.fromEntries(await placementsIn(spec))).toEqual({ 'idle5/v1': 'a' });
    await c.disconnect();
  }, 60_000);

  test('a broker just started places what it is asked at once: it waits for its first read of the map, and counts its own set live', async () => {
    const etcd = await startEtcd();
    const spec = clusterSpec(etcd.url);
    const a = await clusterBroker(spec, 'a', 'a1');
    // no wait for the election or the watch: the first sends come while the broker knows nothing yet
    const c = await connect('early', a.hostSpec);
    const sent = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => c.send(`early${i}/v1/x`, { i })));
    expect(sent.map((s) => (s.status === 'fulfilled' ? 'ok' : (s.reason as { code: string }).code))).toEqual(Array(8).fill('ok'));
    expect((await placementsIn(spec)).size).toBe(8);
    await c.disconnect();
  }, 60_000);
});
