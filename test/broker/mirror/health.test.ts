import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { type BrokerProcess, freePort, startProcess, whisker, writeConfig } from '../../support/broker-process.js';
import { connect, tempDir } from '../../support/harness.js';

/**
 * Issue 13 fault 3, with real broker processes: /health and `whisker status` say degraded,
 * with the reason, when a slave is not in step with its master and on a master conflict, and
 * unhealthy when the store refuses writes (SPEC §9, docs/management.md#health).
 */
interface Node {
  readonly serviceId: string;
  readonly dir: string;
  readonly path: string;
  process: BrokerProcess;
}

async function health(node: Node): Promise<{ code: number; body: { status: string; reason?: string; role: string } }> {
  const url = /"url":"(http:[^"]+)"[^\n]*"msg":"management listening"/.exec(node.process.output())![1]!;
  const res = await fetch(`${url}/health`);
  return { code: res.status, body: (await res.json()) as { status: string; reason?: string; role: string } };
}

async function status(node: Node): Promise<string> {
  const result = await whisker(['status', '-c', node.path]);
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

/** /health, re-read until it answers `code` (each read is a real request; bounded) */
async function healthBecomes(node: Node, code: number, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seen = await health(node);
    if (seen.code === code || Date.now() > deadline) return seen;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('honest health (real broker processes)', () => {
  test('a slave cut from its master, a master conflict, a failed store: /health 503 and whisker status say why', async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    const specs = { a: `127.0.0.1:${portA}@a`, b: `127.0.0.1:${portB}@b` };
    const config = (serviceId: string, port: number, peer: string, isMaster: boolean) => ({
      serviceId, isMaster, peers: [peer], socketServer: { host: '127.0.0.1', port }, management: { port: 0 }, heartbeatTimeout: 1,
    });
    const node = async (serviceId: string, port: number, peer: string): Promise<Node> => {
      const dir = tempDir(`whisker-health-${serviceId}-`);
      const path = writeConfig(dir, config(serviceId, port, peer, serviceId === 'a'));
      return { serviceId, dir, path, process: await startProcess(path) };
    };
    const a = await node('a', portA, specs.b);
    const b = await node('b', portB, specs.a);
    await b.process.waitFor(/in step with the master/);
    expect(await health(b)).toEqual({ code: 200, body: expect.objectContaining({ status: 'ok', role: 'slave' }) });
    expect(await status(b)).toMatch(/^b: slave, running, pid/);

    // the master killed: the slave follows nobody
    a.process.child.kill('SIGKILL');
    await a.process.exited;
    const cut = await healthBecomes(b, 503);
    expect(cut).toEqual({ code: 503, body: expect.objectContaining({ status: 'degraded', role: 'slave', reason: 'not in step with a master: none of its peers acts as master (none reached)' }) });
    expect(await status(b)).toMatch(/^b: slave, degraded, pid \d+.*\n {2}reason {8}not in step with a master/);

    // back: in step again, ok again
    const mark = b.process.output().length;
    a.process = await startProcess(a.path);
    await b.process.waitFor(/in step with the master/, mark);
    expect((await healthBecomes(b, 200)).body.status).toBe('ok');

    // b configured as master too: a conflict, both degraded, b yields
    writeConfig(b.dir, { ...(JSON.parse(readFileSync(b.path, 'utf8')) as object), isMaster: true });
    await b.process.waitFor(/two brokers are configured as master/, mark);
    const conflict = 'a and b are all configured as master: a delivers';
    expect(await healthBecomes(b, 503)).toEqual({ code: 503, body: expect.objectContaining({ status: 'degraded', role: 'slave', reason: conflict }) });
    expect(await healthBecomes(a, 503)).toEqual({ code: 503, body: expect.objectContaining({ status: 'degraded', role: 'master', reason: conflict }) });
    expect(await status(b)).toMatch(new RegExp(`^b: slave, degraded, pid \\d+.*\\n {2}reason {8}${conflict}`));
    writeConfig(b.dir, { ...(JSON.parse(readFileSync(b.path, 'utf8')) as object), isMaster: false });
    expect((await healthBecomes(a, 200)).body.status).toBe('ok');

    // the master's store directory replaced by a file: every send refused, and said so
    const store = join(a.dir, 'data', 'store');
    rmSync(store, { recursive: true, force: true });
    writeFileSync(store, 'not a directory');
    const producer = await connect('health-producer', specs.a, { sendTimeout: 2_000 });
    await expect(producer.send('jobs/v1/1', { n: 1 })).rejects.toMatchObject({ code: 'E_STORE' });
    expect(await healthBecomes(a, 503)).toEqual({ code: 503, body: expect.objectContaining({ status: 'unhealthy', reason: expect.stringContaining('message store is unhealthy') }) });
    expect(await status(a)).toMatch(/^a: master, unhealthy, pid \d+.*\n {2}reason {8}message store is unhealthy/);
  }, 90_000);
});
