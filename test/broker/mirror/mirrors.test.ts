import { afterEach, describe, expect, test } from 'vitest';
import { type Broker, startBroker } from '../../../src/server/start.js';
import type { WhiskerError } from '../../../src/protocol/errors.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { brokerConfig, connect, freePort, tempDir, until } from '../../support/harness.js';

/**
 * Mirror brokers in one process (SPEC §9, issue 6): one master delivers, slaves follow its
 * stream of settlements, a promotion by reload delivers what was left, two masters settle
 * which one delivers. The kill -9 failover runs real processes in failover.test.ts.
 */
interface Mirror {
  serviceId: string;
  port: number;
  dir: string;
  broker: Broker;
  spec: string;
  /** the `msg` of every line the broker logged: tests wait on these instead of sleeping */
  logs: string[];
}

const running = new Set<Broker>();
afterEach(async () => {
  await Promise.all([...running].map((b) => b.stop().catch(() => undefined)));
  running.clear();
});

async function ports(n: number): Promise<number[]> {
  return Promise.all(Array.from({ length: n }, () => freePort()));
}

function configFor(serviceId: string, port: number, dir: string, isMaster: boolean, peers: string[], extra: Record<string, unknown> = {}) {
  return brokerConfig({ serviceId, isMaster, peers, socketServer: { host: '127.0.0.1', port }, requeueInterval: 5, logLevel: 'info', ...extra }, dir);
}

async function startMirror(serviceId: string, port: number, dir: string, isMaster: boolean, peers: string[], extra: Record<string, unknown> = {}): Promise<Mirror> {
  const logs: string[] = [];
  const logger = createLogger('info', { write: (line) => void logs.push((JSON.parse(line) as { msg: string }).msg) });
  const broker = await startBroker(configFor(serviceId, port, dir, isMaster, peers, extra), { logger });
  running.add(broker);
  return { serviceId, port, dir, broker, spec: `127.0.0.1:${port}@${serviceId}`, logs };
}

/** brokers a (master), b, c... each listing all the others in `peers` */
async function cluster(n: number, masters: string[] = ['a'], extra: Record<string, unknown> = {}): Promise<Mirror[]> {
  const ids = ['a', 'b', 'c', 'd'].slice(0, n);
  const p = await ports(n);
  const specs = ids.map((id, i) => `127.0.0.1:${p[i]}@${id}`);
  return Promise.all(ids.map((id, i) => startMirror(id, p[i]!, tempDir(), masters.includes(id), specs.filter((_, j) => j !== i), extra)));
}

async function restart(m: Mirror, isMaster: boolean, peers: string[], extra: Record<string, unknown> = {}): Promise<Mirror> {
  await m.broker.stop();
  running.delete(m.broker);
  return startMirror(m.serviceId, m.port, m.dir, isMaster, peers, extra);
}

function peersOf(mirrors: Mirror[], m: Mirror): string[] {
  return mirrors.filter((x) => x !== m).map((x) => x.spec);
}

function held(m: Mirror): number {
  let n = 0;
  for (const queue of m.broker.router.queues.values()) n += queue.size;
  return n;
}

async function linked(mirrors: Mirror[]): Promise<void> {
  await until(() => mirrors.every((m) => m.broker.peers.status().every((p) => p.connected && p.role !== 'unknown')), 5000, 'peer links');
}

describe('mirror brokers', () => {
  test('one master, two slaves: each message delivered once, and no broker keeps it after the ack', async () => {
    const mirrors = await cluster(3);
    await linked(mirrors);
    const hosts = mirrors.map((m) => m.spec);
    const consumer = await connect('worker', hosts, { dedupeWindow: 0 });
    const got: string[] = [];
    const handle = consumer.consume('jobs/v1/*', (_err, msg, done) => {
      got.push(String((msg as { n: number }).n));
      done!();
    });
    await handle.ready;
    const producer = await connect('producer', hosts);
    await Promise.all(Array.from({ length: 200 }, (_, n) => producer.send('jobs/v1/1', { n })));
    await until(() => got.length >= 200, 5000, '200 deliveries');
    // nothing held anywhere: no copy is left that could still be delivered
    await until(() => mirrors.every((m) => held(m) === 0), 5000, 'every broker empty');
    expect(got).toHaveLength(200);
    expect(new Set(got).size).toBe(200);
    expect(mirrors.map((m) => m.broker.router.isMaster)).toEqual([true, false, false]);
  });

  test('paced sends, two competing consumers: an ack that overtakes its message on the slave still settles it there', async () => {
    // the ack (producer -> master -> consumer -> slave) can beat the publish (producer -> slave
    // -> fsync): before the fix the slave kept about 5% of the messages and redelivered them
    const mirrors = await cluster(2);
    const [a, b] = mirrors as [Mirror, Mirror];
    await linked(mirrors);
    const hosts = [a.spec, b.spec];
    const got = new Map<number, number>();
    for (const name of ['worker-1', 'worker-2']) {
      const consumer = await connect(name, hosts, { dedupeWindow: 0 });
      await consumer.consume('jobs/v1/1', { prefetch: 10 }, (_err, msg, done) => {
        const seq = (msg as { n: number }).n;
        got.set(seq, (got.get(seq) ?? 0) + 1);
        done!();
      }).ready;
    }
    const producer = await connect('producer', hosts);
    let sent = 0;
    const pacer = setInterval(() => {
      for (let i = 0; i < 10; i++) void producer.send('jobs/v1/1', { n: sent++ });
    }, 5);
    await until(() => sent >= 3000, 10_000, '3,000 sends');
    clearInterval(pacer);
    await until(() => got.size === sent, 10_000, `all ${sent} consumed`);
    await until(() => held(a) === 0 && held(b) === 0, 5000, `both brokers empty (a ${held(a)}, b ${held(b)})`);
    expect([...got.values()].every((n) => n === 1)).toBe(true);
  });

  test('a message sent to the master alone (the client not reconnected to the slave yet) reaches the slave through the feed', async () => {
    const [a, b] = await cluster(2);
    await linked([a!, b!]);
    const producer = await connect('producer', [a!.spec]);
    await Promise.all(Array.from({ length: 100 }, (_, n) => producer.send('jobs/v1/1', { n })));
    await until(() => held(b!) === 100, 5000, `the slave holds all 100 (${held(b!)})`);
    // the master dies; the promoted slave delivers every one of them
    await a!.broker.stop();
    running.delete(a!.broker);
    b!.broker.reload(configFor('b', b!.port, b!.dir, true, [a!.spec]));
    const consumer = await connect('worker', [b!.spec]);
    const got = new Set<number>();
    await consumer.consume('jobs/v1/*', { prefetch: 50 }, (_err, msg, done) => {
      got.add((msg as { n: number }).n);
      done!();
    }).ready;
    await until(() => got.size === 100, 5000, `100 delivered by the promoted slave (${got.size})`);
  });

  test('acks a slave never saw reach it through the master, and a promoted slave does not deliver them again', async () => {
    const [a, b] = await cluster(2);
    await linked([a!, b!]);
    // this consumer talks to the master only: b learns of its acks from a's feed
    const consumer = await connect('worker', [a!.spec]);
    let count = 0;
    const handle = consumer.consume('jobs/v1/*', (_err, _msg, done) => {
      count++;
      done!();
    });
    await handle.ready;
    const producer = await connect('producer', [a!.spec, b!.spec]);
    await Promise.all(Array.from({ length: 100 }, (_, n) => producer.send('jobs/v1/1', { n })));
    await until(() => count === 100, 5000, '100 deliveries');
    await until(() => held(b!) === 0, 5000, 'slave empty');
    // promotion: b delivers, and has nothing left to deliver
    a!.broker.reload(configFor('a', a!.port, a!.dir, false, [b!.spec]));
    b!.broker.reload(configFor('b', b!.port, b!.dir, true, [a!.spec]));
    // b yields to a until a's new role reaches it over the peer link
    await until(() => b!.broker.router.isMaster, 5000, 'b delivers');
    const late = await connect('worker', [b!.spec]);
    let redelivered = 0;
    await late.consume('jobs/v1/*', (_err, _msg, done) => {
      redelivered++;
      done!();
    }).ready;
    await producer.send('jobs/v1/1', { n: 'after' });
    await until(() => redelivered === 1, 5000, 'the new message');
    await until(() => held(a!) === 0 && held(b!) === 0, 5000, 'both brokers empty');
    expect(redelivered).toBe(1);
  });

  test('a slave that was down catches up: it gets what it missed and drops what was acked meanwhile', async () => {
    const mirrors = await cluster(2);
    const [a, b] = mirrors as [Mirror, Mirror];
    await linked(mirrors);
    const producer = await connect('producer', [a.spec, b.spec]);
    // 50 messages both hold, for a consumer that comes later
    await Promise.all(Array.from({ length: 50 }, (_, n) => producer.send('jobs/v1/1', { n })));
    await until(() => held(b) === 50, 5000, 'slave holds 50');
    await b.broker.stop();
    running.delete(b.broker);
    // while b is down: 30 of the old ones are consumed, 40 new ones arrive
    const consumer = await connect('worker', [a.spec]);
    let consumed = 0;
    const handle = consumer.consume('jobs/v1/*', { prefetch: 1 }, (_err, _msg, done) => {
      consumed++;
      if (consumed <= 30) done!();
    });
    await handle.ready;
    await until(() => consumed === 31, 5000, '30 acked and one in flight');
    await Promise.all(Array.from({ length: 40 }, (_, n) => producer.send('jobs/v1/1', { n: 100 + n })));
    expect(held(a)).toBe(60);
    const back = await restart(b, false, [a.spec]);
    await until(() => held(back) === 60, 5000, `the slave back holds what the master holds (${held(back)})`);
    // logged after the offer of what the sync did not name: had there been one, it was sent by now
    await until(() => back.logs.includes('in step with the master'), 5000, 'in step');
    expect(back.logs.filter((msg) => msg.startsWith('offered the master'))).toEqual([]);
    expect(held(a)).toBe(60); // the 30 acked while b was down are not offered back
    const masterIds = new Set([...a.broker.router.queues.get('jobs/v1')!.messages()].map((m) => m.messageId));
    const slaveIds = new Set([...back.broker.router.queues.get('jobs/v1')!.messages()].map((m) => m.messageId));
    expect(slaveIds).toEqual(masterIds);
  });

  test('a send only a slave stored (E_NO_MASTER) is offered to the master when it is back, and delivered once', async () => {
    const mirrors = await cluster(2);
    const [a, b] = mirrors as [Mirror, Mirror];
    await linked(mirrors);
    await a.broker.stop();
    running.delete(a.broker);
    const producer = await connect('producer', [a.spec, b.spec], { sendTimeout: 300 });
    const outcome = await new Promise<{ code?: string; storedBy?: string[] }>((resolve) =>
      producer.send('jobs/v1/1', { n: 'only-b' }, (err: WhiskerError | null, _: unknown, info?: { storedBy?: string[] }) => resolve({ code: err?.code, storedBy: info?.storedBy })),
    );
    expect(outcome).toEqual({ code: 'E_NO_MASTER', storedBy: ['b'] });
    const back = await startMirror('a', a.port, a.dir, true, [b.spec]);
    await until(() => held(back) === 1, 5000, 'the master holds what b offered');
    const consumer = await connect('worker', [back.spec, b.spec], { dedupeWindow: 0 });
    const got: unknown[] = [];
    await consumer.consume('jobs/v1/*', (_err, msg, done) => {
      got.push(msg);
      done!();
    }).ready;
    await until(() => held(back) === 0 && held(b) === 0, 5000, 'both empty after the ack');
    expect(got).toEqual([{ n: 'only-b' }]);
  });

  test('a send that reached only the slave while both ran (its client cut off from the master) is offered to the master', async () => {
    const mirrors = await cluster(2);
    const [a, b] = mirrors as [Mirror, Mirror];
    await linked(mirrors);
    await until(() => b.broker.peers.status()[0]?.following === true, 5000, 'b follows a');
    const consumer = await connect('worker', [a.spec, b.spec], { dedupeWindow: 0 });
    const got: unknown[] = [];
    await consumer.consume('jobs/v1/*', (_err, msg, done) => {
      got.push(msg);
      done!();
    }).ready;
    // this client reaches the slave only: its send is stored there, and no master answers it
    const producer = await connect('producer', [b.spec], { sendTimeout: 500 });
    const outcome = await new Promise<string | undefined>((resolve) => producer.send('jobs/v1/1', { n: 'via-b' }, (err) => resolve(err?.code)));
    expect(outcome).toBe('E_NO_MASTER');
    await until(() => got.length === 1, 6000, 'delivered by the master once b offered it');
    expect(got).toEqual([{ n: 'via-b' }]);
    await until(() => held(a) === 0 && held(b) === 0, 5000, 'both empty after the ack');
  });

  test('a slave that syncs a backlog of 14,000 gets the bodies the master keeps on disk only, and delivers them all once promoted', async () => {
    const big = { maxItemsInQueue: 20_000 };
    const mirrors = await cluster(2, ['a'], big);
    const [a, b] = mirrors as [Mirror, Mirror];
    await b.broker.stop();
    running.delete(b.broker);
    const TOTAL = 14_000; // past a queue's window of bodies in memory (10,000): the rest are on disk only
    const producer = await connect('producer', [a.spec]);
    for (let i = 0; i < TOTAL; i += 1000) await Promise.all(Array.from({ length: 1000 }, (_, n) => producer.send('jobs/v1/1', { n: i + n })));
    expect(a.broker.router.queues.get('jobs/v1')!.bodiesInMemory).toBeLessThan(TOTAL - 3000);
    const back = await restart(b, false, [a.spec], big);
    await until(() => held(back) === TOTAL, 10_000, `the slave synced the backlog (${held(back)})`);
    await a.broker.softStop();
    running.delete(a.broker);
    back.broker.reload(configFor('b', back.port, back.dir, true, [a.spec], big));
    const consumer = await connect('worker', [back.spec]);
    const got: number[] = [];
    await consumer.consume('jobs/v1/*', { prefetch: 100 }, (_err, msg, done) => {
      got.push((msg as { n: number }).n);
      done!();
    }).ready;
    await until(() => got.length >= TOTAL, 15_000, `the promoted slave delivered the backlog (${got.length})`);
    expect(got).toEqual(Array.from({ length: TOTAL }, (_, n) => n));
  }, 30_000);

  test('past the window of bodies in memory the feed still carries each message whole: the link stays up', async () => {
    // a queue past 10,000 waiting bodies drops a new one's body at once: the feed read it after
    const big = { maxItemsInQueue: 20_000 };
    const mirrors = await cluster(2, ['a'], big);
    const [a, b] = mirrors as [Mirror, Mirror];
    await linked(mirrors);
    await until(() => b.broker.peers.status()[0]?.following === true, 5000, 'b follows a');
    let linkDropped = false;
    const watch = setInterval(() => {
      if (!b.broker.peers.status()[0]?.connected) linkDropped = true;
    }, 2);
    try {
      const producer = await connect('producer', [a.spec]); // b hears of them through the feed only
      const TOTAL = 12_000;
      for (let i = 0; i < TOTAL; i += 1000) await Promise.all(Array.from({ length: 1000 }, (_, n) => producer.send('jobs/v1/1', { n: i + n })));
      await until(() => held(b) === TOTAL, 10_000, `the slave holds all (${held(b)})`);
    } finally {
      clearInterval(watch);
    }
    expect(linkDropped).toBe(false);
  }, 30_000);

  test('two masters configured at once: the lower serviceId delivers, both report it, each message delivered once', async () => {
    const mirrors = await cluster(2, ['a', 'b']);
    const [a, b] = mirrors as [Mirror, Mirror];
    await linked(mirrors);
    await until(() => a.broker.peers.conflict !== null && b.broker.peers.conflict !== null, 5000, 'both see the conflict');
    expect(a.broker.peers.conflict).toEqual({ masters: ['a', 'b'], delivering: 'a' });
    expect(b.broker.peers.conflict).toEqual({ masters: ['a', 'b'], delivering: 'a' });
    expect([a.broker.router.isMaster, b.broker.router.isMaster]).toEqual([true, false]);
    const hosts = [a.spec, b.spec];
    const consumer = await connect('worker', hosts);
    const got = new Map<number, number>();
    await consumer.consume('jobs/v1/*', (_err, msg, done) => {
      const seq = (msg as { n: number }).n;
      got.set(seq, (got.get(seq) ?? 0) + 1);
      done!();
    }).ready;
    const producer = await connect('producer', hosts);
    await Promise.all(Array.from({ length: 200 }, (_, n) => producer.send('jobs/v1/1', { n })));
    await until(() => got.size === 200, 5000, '200 messages');
    await until(() => held(a) === 0 && held(b) === 0, 5000, 'both empty');
    expect([...got.values()].every((c) => c === 1)).toBe(true);
    // the conflict ends when b is configured as a slave
    b.broker.reload(configFor('b', b.port, b.dir, false, [a.spec]));
    await until(() => a.broker.peers.conflict === null && b.broker.peers.conflict === null, 5000, 'conflict over');
  });

  test('planned switch: soft-stop the master, promote the slave, zero duplicates and nothing lost', async () => {
    const mirrors = await cluster(2);
    const [a, b] = mirrors as [Mirror, Mirror];
    await linked(mirrors);
    const hosts = [a.spec, b.spec];
    const consumer = await connect('worker', hosts);
    const got = new Map<number, number>();
    await consumer.consume('jobs/v1/*', { prefetch: 10 }, (_err, msg, done) => {
      const seq = (msg as { n: number }).n;
      got.set(seq, (got.get(seq) ?? 0) + 1);
      setTimeout(() => done!(), 2);
    }).ready;
    const producer = await connect('producer', hosts, { sendTimeout: 10_000 });
    const sends: Array<Promise<unknown>> = [];
    let n = 0;
    const pacer = setInterval(() => {
      for (let i = 0; i < 10; i++) sends.push(producer.send('jobs/v1/1', { n: n++ }));
    }, 5);
    await until(() => got.size >= 300, 10_000, '300 consumed');
    const stopped = a.broker.softStop();
    await stopped;
    running.delete(a.broker);
    b.broker.reload(configFor('b', b.port, b.dir, true, [a.spec]));
    await until(() => n >= 1500, 10_000, 'more sends');
    clearInterval(pacer);
    const outcomes = await Promise.allSettled(sends);
    const failed = outcomes.filter((o) => o.status === 'rejected');
    expect(failed).toEqual([]);
    await until(() => got.size === n, 10_000, `all ${n} consumed (${got.size})`);
    await until(() => held(b) === 0, 10_000, 'the new master holds nothing');
    const duplicated = [...got.values()].filter((c) => c > 1).length;
    console.log(`planned switch: ${n} sent, ${got.size} consumed, ${duplicated} duplicated`);
    expect(duplicated).toBe(0);
  });

  test('a peer that is not in the list cannot log in as one', async () => {
    const [port] = await ports(1);
    const a = await startMirror('a', port!, tempDir(), true, []);
    const stranger = await startMirror('x', await freePort(), tempDir(), false, [a.spec]);
    // refused, and refused again on the next try: it never gets in
    await until(() => stranger.logs.filter((msg) => msg === 'peer refused our link').length >= 2, 5000, 'refused twice');
    expect(stranger.broker.peers.status()[0]).toMatchObject({ connected: false, role: 'unknown' });
    expect(a.broker.router.isMaster).toBe(true);
  });

  test('config: a peer must name a serviceId, not its own', () => {
    const dir = tempDir();
    expect(() => configFor('a', 1, dir, true, ['127.0.0.1:1'])).toThrow(/peers\[0\]|serviceId/);
    expect(() => configFor('a', 1, dir, true, ['127.0.0.1:1@a'])).toThrow(/own serviceId/);
    expect(() => peersOf([], { spec: 'x' } as Mirror)).not.toThrow();
  });
});
