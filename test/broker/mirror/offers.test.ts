import { describe, expect, test } from 'vitest';
import { startBroker, type Broker } from '../../../src/server/start.js';
import { createLogger } from '../../../src/runtime/logger.js';
import type { WhiskerError } from '../../../src/protocol/errors.js';
import { broker, brokerConfig, connect, freePort, tempDir, until } from '../../support/harness.js';

/**
 * Issue 13 fault 5: what a slave offers its master is counted in a metric, and logged once a
 * minute rather than once a second; E_NO_MASTER always says who stored the send (SPEC §3).
 */
const started: Broker[] = [];

async function mirror(serviceId: string, port: number, peer: string, extra: Record<string, unknown> = {}) {
  const logs: string[] = [];
  const logger = createLogger('info', { write: (line) => void logs.push((JSON.parse(line) as { msg: string }).msg) });
  const config = brokerConfig({ serviceId, isMaster: serviceId === 'a', peers: [peer], socketServer: { host: '127.0.0.1', port }, logLevel: 'info', ...extra }, tempDir());
  const b = await startBroker(config, { logger });
  started.push(b);
  return { broker: b, logs };
}

function sendOutcome(client: Awaited<ReturnType<typeof connect>>, data: unknown): Promise<{ code?: string; storedBy?: string[] }> {
  return new Promise((resolve) =>
    client.send('jobs/v1/1', data, (err: WhiskerError | null, _: unknown, info?: { storedBy?: string[] }) => resolve({ code: err?.code, storedBy: info?.storedBy })),
  );
}

describe('offers to the master', () => {
  test('three rounds of sends only the slave got: all delivered once by the master, one log line, the metric counts each message', async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    const specs = { a: `127.0.0.1:${portA}@a`, b: `127.0.0.1:${portB}@b` };
    try {
      await mirror('a', portA, specs.b);
      const slave = await mirror('b', portB, specs.a, { management: { port: 0 } });
      await until(() => slave.logs.includes('in step with the master'), 5_000, 'b in step');
      const got: number[] = [];
      const consumer = await connect('offer-worker', [specs.a, specs.b], { dedupeWindow: 0 });
      await consumer.consume('jobs/v1/*', (_err, msg, done) => {
        got.push((msg as { n: number }).n);
        done!();
      }).ready;
      // this client reaches the slave only: no master answers, the slave offers what it stored
      const producer = await connect('offer-producer', [specs.b], { sendTimeout: 300 });
      for (let round = 0; round < 3; round++) {
        const outcomes = await Promise.all(Array.from({ length: 5 }, (_, i) => sendOutcome(producer, { n: round * 5 + i })));
        expect(outcomes.every((o) => o.code === 'E_NO_MASTER')).toBe(true);
        await until(() => got.length === (round + 1) * 5, 8_000, `round ${round + 1} delivered by the master`);
      }
      expect(got.sort((x, y) => x - y)).toEqual([...Array(15).keys()]);
      expect(slave.logs.filter((msg) => msg === 'offered the master what only this broker got from clients')).toHaveLength(1);
      const metrics = await (await fetch(`http://127.0.0.1:${slave.broker.managementPort}/metrics`)).text();
      expect(metrics).toMatch(/^whisker_offered_to_master_total 15$/m);
    } finally {
      await Promise.all(started.splice(0).map((b) => b.stop()));
    }
  }, 40_000);

  test('E_NO_MASTER with no broker at all: info.storedBy is []', async () => {
    const b = await broker({ serviceId: 'gone' });
    const producer = await connect('no-broker-producer', `127.0.0.1:${b.port}@gone`, { sendTimeout: 200 });
    await b.stop();
    expect(await sendOutcome(producer, { n: 1 })).toEqual({ code: 'E_NO_MASTER', storedBy: [] });
  });
});
