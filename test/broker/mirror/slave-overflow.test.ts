import { afterEach, describe, expect, test } from 'vitest';
import { type Broker, startBroker } from '../../../src/server/start.js';
import { brokerConfig, connect, freePort, tempDir, until } from '../../support/harness.js';

/**
 * A slave with the same `maxItemsInQueue` and `ttl` as its master (SPEC §9: a promoted slave
 * loses nothing the master held). The master does not count what is in flight as waiting; a
 * slave delivers nothing, so everything it holds looked waiting to it: with `drop-oldest` it
 * dropped the master's deliveries in flight, and lost them when it was promoted.
 */
const running = new Set<Broker>();
afterEach(async () => {
  await Promise.all([...running].map((b) => b.stop().catch(() => undefined)));
  running.clear();
});

function configFor(serviceId: string, port: number, dir: string, isMaster: boolean, peers: string[], extra: Record<string, unknown> = {}) {
  return brokerConfig({ serviceId, isMaster, peers, socketServer: { host: '127.0.0.1', port }, maxItemsInQueue: 10, overflow: 'drop-oldest', requeueInterval: 60, ...extra }, dir);
}

async function pair(extra: Record<string, unknown> = {}) {
  const ports = await Promise.all([freePort(), freePort()]);
  const dirs = [tempDir(), tempDir()];
  const specs = ports.map((port, i) => `127.0.0.1:${port}@${'ab'[i]}`);
  const configs = ports.map((port, i) => configFor('ab'[i]!, port, dirs[i]!, i === 0, specs.filter((_, j) => j !== i), extra));
  const [a, b] = await Promise.all(configs.map((c) => startBroker(c)));
  running.add(a!);
  running.add(b!);
  await until(() => [a!, b!].every((x) => x.peers.status().every((p) => p.connected && p.role !== 'unknown')), 5000, 'peer links');
  await until(() => b!.peers.status().some((p) => p.inStep), 5000, 'the slave in step');
  const promote = () => b!.reload(configFor('b', ports[1]!, dirs[1]!, true, [specs[0]!], extra));
  return { a: a!, b: b!, hosts: specs, promote };
}

function heldIds(b: Broker): string[] {
  const ids: string[] = [];
  for (const queue of b.router.queues.values()) queue.heldIds(ids);
  return ids.sort();
}

describe('a slave with the master\'s maxItemsInQueue and ttl', () => {
  test('drop-oldest: deliveries in flight on the master stay on the slave, and the promoted slave delivers every one the master held', async () => {
    const { a, b, hosts, promote } = await pair();
    // a consumer of both brokers that holds its 5 deliveries unacked
    const holder = await connect('holder', hosts, { dedupeWindow: 0 });
    const held: number[] = [];
    await holder.consume('jobs/v1/*', { prefetch: 5 }, (_err, msg) => void held.push((msg as { n: number }).n)).ready;
    const producer = await connect('producer', hosts);
    for (let n = 0; n < 5; n++) await producer.send('jobs/v1/1', { n });
    await until(() => held.length === 5, 5000, '5 deliveries in flight');
    // 10 more: the master holds 10 waiting and 5 in flight, its depth is 10, it drops nothing
    for (let n = 5; n < 15; n++) await producer.send('jobs/v1/1', { n });
    await until(() => heldIds(a).length === 15, 5000, `the master holds 15 (${heldIds(a).length})`);
    // the slave has had every send from the client and every feed of the master
    await until(() => b.router.queues.get('jobs/v1')?.counters.received === 15, 5000, 'the slave took every send');
    expect(heldIds(b)).toEqual(heldIds(a));

    // the master goes (its consumer first, so it has nothing to wait for); the slave is promoted
    await holder.disconnect();
    await producer.disconnect();
    await a.stop();
    running.delete(a);
    promote();
    const consumer = await connect('worker', [hosts[1]!], { dedupeWindow: 0 });
    const got = new Set<number>();
    await consumer.consume('jobs/v1/*', { prefetch: 20 }, (_err, msg, done) => {
      got.add((msg as { n: number }).n);
      done!();
    }).ready;
    await until(() => got.size === 15, 5000, `15 delivered by the promoted slave (${[...got].sort((x, y) => x - y).join(',')})`);
    expect([...got].sort((x, y) => x - y)).toEqual(Array.from({ length: 15 }, (_, n) => n));
    await consumer.disconnect();
  });

  test('ttl: a delivery in flight on the master past its ttl stays on the slave while the master holds it; a slave that lost its master expires it', async () => {
    const { a, b, hosts } = await pair({ channels: { 'jobs/v1': { ttl: 1 } } });
    const holder = await connect('holder', hosts, { dedupeWindow: 0 });
    const held: number[] = [];
    await holder.consume('jobs/v1/*', { prefetch: 3 }, (_err, msg) => void held.push((msg as { n: number }).n)).ready;
    const producer = await connect('producer', hosts);
    for (let n = 0; n < 3; n++) await producer.send('jobs/v1/1', { n });
    await until(() => held.length === 3, 5000, '3 deliveries in flight');
    await until(() => heldIds(b).length === 3, 5000, 'the slave holds the 3');
    // past the ttl: in flight, the master keeps them until they are acked or come back (SPEC §7)
    await new Promise((r) => setTimeout(r, 1_500));
    expect(heldIds(a)).toHaveLength(3);
    expect(heldIds(b)).toEqual(heldIds(a));
    // the master is gone: the slave follows none and its own ttl applies again
    await holder.disconnect();
    await producer.disconnect();
    await a.stop();
    running.delete(a);
    await until(() => heldIds(b).length === 0, 5000, `the slave expired them (${heldIds(b).length} held)`);
  });
});
