import { afterEach, describe, expect, test } from 'vitest';
import { type Broker, startBroker } from '../../../src/server/start.js';
import { brokerConfig, connect, freePort, tempDir, until } from '../../support/harness.js';

/**
 * Issue 27 item 11: a slave never delivers, so what its acks settle must leave its groups' ready
 * lists at once (they were trimmed only by a delivery): a slave's memory is as flat as its
 * master's. Observed through `queue.listedSlots`, the slots those lists keep.
 */
const running = new Set<Broker>();
afterEach(async () => {
  await Promise.all([...running].map((b) => b.stop().catch(() => undefined)));
  running.clear();
});

async function mirrorPair(): Promise<[Broker, Broker, string[]]> {
  const ports = await Promise.all([freePort(), freePort()]);
  const specs = ports.map((port, i) => `127.0.0.1:${port}@${'ab'[i]}`);
  const brokers = await Promise.all(ports.map((port, i) => startBroker(brokerConfig({
    serviceId: 'ab'[i], maxItemsInQueue: 20_000, isMaster: i === 0, peers: specs.filter((_, j) => j !== i), socketServer: { host: '127.0.0.1', port },
  }, tempDir()))));
  for (const b of brokers) running.add(b);
  await until(() => brokers.every((b) => b.peers.status().every((p) => p.connected && p.role !== 'unknown')), 5000, 'peer links');
  return [brokers[0]!, brokers[1]!, specs];
}

function held(b: Broker): { held: number; listedSlots: number } {
  let n = 0;
  let slots = 0;
  for (const queue of b.router.queues.values()) {
    n += queue.size;
    slots += queue.listedSlots;
  }
  return { held: n, listedSlots: slots };
}

describe('a slave lets go of what was acked', () => {
  test('10,000 messages consumed and acked through the master: neither broker keeps a settled record', async () => {
    const [master, slave, hosts] = await mirrorPair();
    const consumer = await connect('slave-mem-worker', hosts, { dedupeWindow: 0 });
    let acked = 0;
    await consumer.consume('mem/v1/*', { prefetch: 100 }, (err, _msg, done) => {
      if (err) throw err;
      acked++;
      done!();
    }).ready;
    const producer = await connect('slave-mem-producer', hosts);
    const TOTAL = 10_000;
    for (let sent = 0; sent < TOTAL; sent += 500) {
      await Promise.all(Array.from({ length: 500 }, (_, i) => producer.send(`mem/v1/${i % 10}`, { n: sent + i })));
    }
    await until(() => acked >= TOTAL, 90_000, `${TOTAL} acked (${acked})`);
    await until(() => held(master).held === 0 && held(slave).held === 0, 10_000, 'both brokers empty');
    console.log(`slave memory: after ${TOTAL} acked, master ${JSON.stringify(held(master))}, slave ${JSON.stringify(held(slave))}`);
    expect(held(master)).toEqual({ held: 0, listedSlots: 0 });
    expect(held(slave)).toEqual({ held: 0, listedSlots: 0 });
  }, 150_000);
});
