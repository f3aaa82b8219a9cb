import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { type BrokerProcess, freePort, startProcess, writeConfig } from '../support/broker-process.js';
import { connect, Inbox, tempDir } from '../support/harness.js';

/**
 * Issue 13 fault 6, with real broker processes: SIGSTOP freezes the master without closing a
 * socket (what a partition does: no FIN, no RST). Heartbeats must close its links within
 * seconds, so its role is unknown and a slave promoted meanwhile delivers (SPEC §9).
 */
const HEARTBEAT_S = 1;

interface Node {
  readonly dir: string;
  readonly path: string;
  readonly process: BrokerProcess;
}

describe('heartbeats (real broker processes)', () => {
  test('the master frozen by SIGSTOP: its peer and its clients drop it within seconds, and the slave promoted meanwhile delivers', async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    const specs = { a: `127.0.0.1:${portA}@a`, b: `127.0.0.1:${portB}@b` };
    const start = async (serviceId: 'a' | 'b', port: number, peer: string): Promise<Node> => {
      const dir = tempDir(`whisker-heartbeat-${serviceId}-`);
      const path = writeConfig(dir, { serviceId, isMaster: serviceId === 'a', peers: [peer], socketServer: { host: '127.0.0.1', port }, heartbeatTimeout: HEARTBEAT_S });
      return { dir, path, process: await startProcess(path) };
    };
    const master = await start('a', portA, specs.b);
    const slave = await start('b', portB, specs.a);
    // both links up (each broker dials the other) before the freeze
    await Promise.all([slave.process.waitFor(/in step with the master/), slave.process.waitFor(/"msg":"peer connected"/)]);

    const hosts = [specs.a, specs.b];
    const inbox = new Inbox();
    const consumer = await connect('heartbeat-worker', hosts, { heartbeatTimeout: HEARTBEAT_S * 1000 });
    await consumer.consume('jobs/v1/1', { prefetch: 10 }, inbox.consumer);
    const producer = await connect('heartbeat-producer', hosts, { heartbeatTimeout: HEARTBEAT_S * 1000 });
    await producer.send('jobs/v1/1', { n: 1 });
    await inbox.waitFor(1);

    const masterSeen = new Promise<number>((resolve) => consumer.on('master', (id?: string | null) => id === 'b' && resolve(performance.now())));
    const mark = slave.process.output().length;
    const frozenAt = performance.now();
    master.process.child.kill('SIGSTOP');
    try {
      // both links between the brokers are gone: the one the slave dialed, the one it accepted
      await Promise.all([slave.process.waitFor(/"msg":"link to peer lost/, mark, 10_000), slave.process.waitFor(/"msg":"peer disconnected"/, mark, 10_000)]);
      const droppedAfterMs = performance.now() - frozenAt;
      // promoted during the freeze: nothing says the frozen one is a master any more
      const config = JSON.parse(readFileSync(slave.path, 'utf8')) as Record<string, unknown>;
      writeConfig(slave.dir, { ...config, isMaster: true });
      await slave.process.waitFor(/"msg":"delivering: this broker acts as master"/, mark, 10_000);
      const switchedAfterMs = (await masterSeen) - frozenAt;
      await expect(producer.send('jobs/v1/1', { n: 2 })).resolves.toMatchObject({ messageId: expect.any(String) });
      await inbox.waitFor(2, 10_000);
      console.log(`SIGSTOP of the master: peer links closed after ${Math.round(droppedAfterMs)} ms, the consumer took b as master after ${Math.round(switchedAfterMs)} ms (heartbeatTimeout ${HEARTBEAT_S} s)`);
      expect(droppedAfterMs).toBeLessThan(HEARTBEAT_S * 1000 * 4);
      expect(slave.process.output().slice(mark)).not.toContain('two brokers are configured as master');
      expect(inbox.items.map((r) => r.msg)).toEqual([{ n: 1 }, { n: 2 }]);
    } finally {
      master.process.child.kill('SIGCONT');
    }
  }, 60_000);
});
