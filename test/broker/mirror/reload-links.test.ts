import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { type BrokerProcess, freePort, startProcess, writeConfig } from '../../support/broker-process.js';
import { startBroker } from '../../../src/server/start.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { brokerConfig, connect, tempDir, until } from '../../support/harness.js';

/**
 * Issue 13 fault 1, with real broker processes: a reload (SIGHUP, or the watched file rewritten
 * unchanged) keeps every session whose rights did not change, the peer link above all (SPEC §9).
 */
const RELOADS = 20;

interface Node {
  readonly serviceId: string;
  readonly dir: string;
  readonly path: string;
  readonly process: BrokerProcess;
}

function count(output: string, msg: string): number {
  return output.split('\n').filter((line) => line.includes(`"msg":"${msg}"`)).length;
}

/** the fingerprints a broker wrote to a `revoked/` directory, clients' and peers' */
function revoked(dir: string): string[] {
  return ['clients/revoked', 'data/peers/revoked'].flatMap((sub) => {
    try {
      return readdirSync(join(dir, sub));
    } catch {
      return [];
    }
  });
}

describe('reload and the peer link (real broker processes)', () => {
  test(`${RELOADS} reloads while messages flow: the peer link never drops, the slave never resyncs, nothing is revoked`, async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    const specs = { a: `127.0.0.1:${portA}@a`, b: `127.0.0.1:${portB}@b` };
    const start = async (serviceId: 'a' | 'b', port: number, peer: string): Promise<Node> => {
      const dir = tempDir(`whisker-reload-link-${serviceId}-`);
      const config = { serviceId, isMaster: serviceId === 'a', peers: [peer], socketServer: { host: '127.0.0.1', port } };
      const path = writeConfig(dir, config);
      return { serviceId, dir, path, process: await startProcess(path) };
    };
    const master = await start('a', portA, specs.b);
    const slave = await start('b', portB, specs.a);
    // both links up (each broker dials the other) and the slave in step, before counting
    await Promise.all([slave.process.waitFor(/in step with the master/), master.process.waitFor(/"msg":"peer connected"/), slave.process.waitFor(/"msg":"peer connected"/)]);

    const hosts = [specs.a, specs.b];
    const received = new Map<number, number>();
    const consumer = await connect('reload-link-worker', hosts, { dedupeWindow: 0 });
    await consumer.consume('jobs/v1/1', { prefetch: 10 }, (err, msg, done) => {
      if (err) throw err;
      const seq = (msg as { seq: number }).seq;
      received.set(seq, (received.get(seq) ?? 0) + 1);
      done!();
    });
    const producer = await connect('reload-link-producer', hosts);
    let sent = 0;
    let failed = 0;
    let sending = true;
    const flow = (async () => {
      while (sending) {
        const seq = sent++;
        await producer.send('jobs/v1/1', { seq }).catch(() => failed++);
      }
    })();

    const linkEvents = () =>
      [master, slave].map(({ process }) => {
        const out = process.output();
        return {
          connected: count(out, 'peer connected'),
          disconnected: count(out, 'peer disconnected'),
          refused: count(out, 'connection refused') + count(out, 'peer refused our link'),
          inStep: count(out, 'in step with the master'),
        };
      });
    const before = linkEvents();
    for (let i = 0; i < RELOADS; i++) {
      const node = i % 2 === 0 ? master : slave;
      const mark = node.process.output().length;
      // every third reload by the file watch (the file rewritten as it was), the others by SIGHUP
      if (i % 3 === 2) writeConfig(node.dir, JSON.parse(readFileSync(node.path, 'utf8')) as Record<string, unknown>);
      else node.process.child.kill('SIGHUP');
      await node.process.waitFor(/"msg":"config reloaded"/, mark);
      // messages flow between two reloads: the consumer gets 20 more
      const target = received.size + 20;
      await until(() => received.size >= target, 10_000, `20 more deliveries after reload ${i + 1}`);
    }
    sending = false;
    await flow;
    const after = linkEvents();
    await until(() => received.size >= sent - failed, 10_000, 'every message delivered').catch(() => undefined);

    const duplicated = [...received.values()].filter((n) => n > 1).length;
    console.log(`reloads: ${RELOADS}; link events during them: master ${JSON.stringify(after[0])} (before ${JSON.stringify(before[0])}), slave ${JSON.stringify(after[1])} (before ${JSON.stringify(before[1])}); sent ${sent}, failed ${failed}, received ${received.size}, duplicated ${duplicated}`);
    expect(count(master.process.output(), 'config reloaded') + count(slave.process.output(), 'config reloaded')).toBe(RELOADS);
    expect(after).toEqual(before);
    expect(after[1]!.inStep).toBe(1);
    expect(revoked(master.dir)).toEqual([]);
    expect(revoked(slave.dir)).toEqual([]);
    expect(failed).toBe(0);
    expect(received.size).toBe(sent);
    expect(duplicated).toBe(0);
  }, 90_000);

  test('a broker dropped from peers at a reload loses its link (E_AUTH), and its key is not revoked', async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    const logs: Array<{ msg: string; code?: string }> = [];
    const logger = createLogger('info', { write: (line) => void logs.push(JSON.parse(line) as { msg: string; code?: string }) });
    const dirs = { a: tempDir(), b: tempDir() };
    const config = (serviceId: 'a' | 'b', port: number, peers: string[]) =>
      brokerConfig({ serviceId, isMaster: serviceId === 'a', peers, socketServer: { host: '127.0.0.1', port }, logLevel: 'info' }, dirs[serviceId]);
    const a = await startBroker(config('a', portA, [`127.0.0.1:${portB}@b`]), { watch: false });
    const b = await startBroker(config('b', portB, [`127.0.0.1:${portA}@a`]), { logger, watch: false });
    try {
      await until(() => b.peers.status()[0]?.inStep === true, 10_000, 'b in step');
      a.reload(config('a', portA, []));
      await until(() => logs.some((l) => l.msg === 'peer refused our link'), 10_000, "b's link refused");
      expect(logs.find((l) => l.msg === 'peer refused our link')).toMatchObject({ code: 'E_AUTH' });
      expect(readdirSync(join(dirs.a, 'whisker-data', 'peers', 'revoked'))).toEqual([]);
      expect(readdirSync(join(dirs.a, 'whisker-data', 'clients', 'revoked'))).toEqual([]);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});
