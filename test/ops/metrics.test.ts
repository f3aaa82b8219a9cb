import { describe, expect, test } from 'vitest';
import { startBroker } from '../../src/server/start.js';
import type { Done } from '../../src/client/types.js';
import { broker, brokerConfig, connect, freePort, Inbox, tempDir, until, type TestBroker } from '../support/harness.js';
import { parseMetrics, samplesOf, valueOf } from '../support/prom.js';

/** The alerting metrics (issue 17, docs/management.md#metrics), scraped and parsed strictly. */
const scrape = async (port: number | null) => parseMetrics(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());

describe('alerting metrics', () => {
  test('oldest waiting age, consumers and listeners, the busiest group, and Node process metrics', async () => {
    let clock = 1_000_000;
    const b = await broker({ management: { port: 0 } }, { now: () => clock });
    const [worker, reader, producer] = await Promise.all([connect('worker', b.hostSpec), connect('reader', b.hostSpec), connect('producer', b.hostSpec)]);
    const held: Done[] = [];
    await worker.consume('jobs/v1/a', { prefetch: 2 }, (_err, _msg, done) => void held.push(done!)).ready;
    await reader.listen('jobs/v1/a', new Inbox().listener).ready;
    await producer.send('jobs/v1/a', 1);
    await producer.send('jobs/v1/a', 2);
    clock += 5_000;
    await producer.send('jobs/v1/b', 3); // nobody subscribes to b: it waits
    await until(() => held.length === 2, 5000, 'two deliveries');
    clock += 7_500;

    const m = await scrape(b.managementPort);
    const q = { queue: 'jobs/v1' };
    expect(valueOf(m, 'whisker_queue_oldest_waiting_seconds', q)).toBe(7.5);
    expect(valueOf(m, 'whisker_queue_consumers', q)).toBe(1);
    expect(valueOf(m, 'whisker_queue_listeners', q)).toBe(1);
    expect(valueOf(m, 'whisker_queue_group_in_flight_max', q)).toBe(2);
    // per-group series are opt-in
    expect(samplesOf(m, 'whisker_group_in_flight')).toEqual([]);
    expect(m.get('whisker_group_in_flight')?.type).toBe('gauge');
    // prom-client's default collectors, in this broker's registry
    for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds']) {
      expect(valueOf(m, name), name).toBeGreaterThanOrEqual(0);
    }
    expect(m.get('whisker_store_append_seconds')?.type).toBe('histogram');
    expect(valueOf(m, 'whisker_master_seen')).toBe(1);

    // acking both: the age goes to the message still waiting, the group empties
    for (const done of held) done();
    await until(() => b.router.queues.get('jobs/v1')!.inFlightCount === 0, 5000, 'acks');
    // a slow render is served again for 10x its time (at most 5 s, docs/management.md): poll
    let after = await scrape(b.managementPort);
    for (let t = 0; valueOf(after, 'whisker_queue_group_in_flight_max', q) !== 0 && t < 60; t++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      after = await scrape(b.managementPort);
    }
    expect(valueOf(after, 'whisker_queue_oldest_waiting_seconds', q)).toBe(7.5);
    expect(valueOf(after, 'whisker_queue_group_in_flight_max', q)).toBe(0);
  });

  test('memoryWindow: waiting messages past it are cold rows (whisker_queue_cold_messages), all delivered in order once a consumer comes', async () => {
    const b = await broker({ management: { port: 0 }, memoryWindow: 10, maxItemsInQueue: 10_000 });
    const [worker, producer] = await Promise.all([connect('worker', b.hostSpec), connect('producer', b.hostSpec)]);
    for (let i = 0; i < 300; i++) void producer.send('cold/v1/a', i);
    await until(() => b.router.queues.get('cold/v1')?.depth === 300, 10_000, '300 waiting');
    const q = { queue: 'cold/v1' };
    const m = await scrape(b.managementPort);
    expect(valueOf(m, 'whisker_queue_cold_messages', q)).toBe(290);
    expect(valueOf(m, 'whisker_queue_depth', q)).toBe(300);
    const got: number[] = [];
    await worker.consume('cold/v1/a', { prefetch: 20 }, (_err, msg, done) => {
      got.push(msg as number);
      done!();
    }).ready;
    await until(() => got.length === 300, 10_000, 'all 300 delivered');
    expect(got).toEqual(Array.from({ length: 300 }, (_, i) => i));
    let after = await scrape(b.managementPort);
    for (let t = 0; valueOf(after, 'whisker_queue_cold_messages', q) !== 0 && t < 60; t++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      after = await scrape(b.managementPort);
    }
    expect(valueOf(after, 'whisker_queue_cold_messages', q)).toBe(0);
  });

  test('label cardinality: queues past maxQueueSeries add up under _other; group series opt-in and capped', async () => {
    const b = await broker({ management: { port: 0, maxQueueSeries: 2, groupSeries: true, maxGroupSeries: 2 } });
    const [worker, producer] = await Promise.all([connect('worker', b.hostSpec), connect('producer', b.hostSpec)]);
    const held: Done[] = [];
    for (const id of ['x', 'y', 'z']) await worker.consume(`g/v1/${id}`, { prefetch: 5 }, (_err, _msg, done) => void held.push(done!)).ready;
    for (const [id, n] of [['x', 3], ['y', 1], ['z', 2]] as const) for (let i = 0; i < n; i++) await producer.send(`g/v1/${id}`, i);
    for (const name of ['a', 'b', 'c', 'd']) await producer.send(`${name}/v1/1`, 1);
    await until(() => held.length === 6, 5000, 'six deliveries');

    const m = await scrape(b.managementPort);
    const queues = samplesOf(m, 'whisker_messages_received_total').map((s) => s.labels.queue);
    expect(queues).toEqual(['a/v1', 'b/v1', '_other']);
    expect(valueOf(m, 'whisker_messages_received_total', { queue: '_other' })).toBe(2 + 6);
    expect(valueOf(m, 'whisker_queue_depth', { queue: '_other' })).toBe(2);
    expect(valueOf(m, 'whisker_queue_consumers', { queue: '_other' })).toBe(3);
    const groups = samplesOf(m, 'whisker_group_in_flight');
    expect(groups.map((g) => [g.labels, g.value])).toEqual([
      [{ queue: 'g/v1', mode: 'consume', client: '', id: 'x' }, 3],
      [{ queue: 'g/v1', mode: 'consume', client: '', id: 'z' }, 2],
    ]);
    for (const done of held) done();
  });

  test('a slave reports its master in step, with its lag; a lone slave has no master in sight', async () => {
    const [pa, pb] = await Promise.all([freePort(), freePort()]);
    const spec = (id: string, port: number) => `127.0.0.1:${port}@${id}`;
    const start = (id: string, port: number, isMaster: boolean, peer: string) =>
      startBroker(brokerConfig({ serviceId: id, isMaster, peers: [peer], socketServer: { host: '127.0.0.1', port }, management: { port: 0 } }, tempDir()));
    const slave = await start('b', pb, false, spec('a', pa));
    const brokers = [slave];
    try {
      const alone = await scrape(slave.managementPort);
      expect(valueOf(alone, 'whisker_master_seen')).toBe(0);
      expect(valueOf(alone, 'whisker_peer_connected', { peer: 'a' })).toBe(0);
      expect(valueOf(alone, 'whisker_peer_role', { peer: 'a' })).toBe(-1);
      const master = await start('a', pa, true, spec('b', pb));
      brokers.push(master);
      await until(() => slave.peers.status()[0]?.inStep === true, 10_000, 'the slave in step');
      // scraped until they read so (under load a first scrape read whisker_peer_connected 0 just
      // after the slave's status said in step), every one at once
      const seen = async () => {
        const m = await scrape(slave.managementPort);
        const peer = (name: string) => valueOf(m, name, { peer: 'a' });
        return {
          connected: peer('whisker_peer_connected'), role: peer('whisker_peer_role'), following: peer('whisker_peer_following'), inStep: peer('whisker_peer_in_step'),
          lagMessages: peer('whisker_peer_lag_messages'), lagSeconds: peer('whisker_peer_lag_seconds'), masterSeen: valueOf(m, 'whisker_master_seen'),
        };
      };
      await expect.poll(seen, { timeout: 10_000, interval: 100 }).toEqual({ connected: 1, role: 1, following: 1, inStep: 1, lagMessages: 0, lagSeconds: 0, masterSeen: 1 });
      const onMaster = await scrape(master.managementPort);
      expect(valueOf(onMaster, 'whisker_peer_role', { peer: 'b' })).toBe(0);
      expect(valueOf(onMaster, 'whisker_peer_in_step', { peer: 'b' })).toBe(0);
    } finally {
      await Promise.all(brokers.map((x) => x.stop()));
    }
  });
});

export type { TestBroker };
