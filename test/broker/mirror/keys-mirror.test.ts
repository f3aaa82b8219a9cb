import { describe, expect, test } from 'vitest';
import { type BrokerProcess, freePort, startProcess, whisker, writeConfig } from '../../support/broker-process.js';
import { tempDir, until } from '../../support/harness.js';
import { freshKeys, reasonOf, tryConnect } from '../../support/key-clients.js';
import type { WhiskerError } from '../../../src/protocol/errors.js';

/**
 * Issue 28 items 1 and 4, with real broker processes: one identity per mirror set (SPEC §4).
 * A revocation or a registration made on either mirror holds on both, a name bound two ways while
 * the link was down ends with the master's key on both, and a refused client stops redialing.
 */
interface Node {
  readonly serviceId: 'a' | 'b';
  readonly dir: string;
  readonly path: string;
  process: BrokerProcess;
}

async function pair(): Promise<{ a: Node; b: Node; hosts: string[]; restart: (node: Node) => Promise<void>; stop: (node: Node) => Promise<void> }> {
  const ports = { a: await freePort(), b: await freePort() };
  const spec = (id: 'a' | 'b') => `127.0.0.1:${ports[id]}@${id}`;
  const make = (serviceId: 'a' | 'b'): Node => {
    const dir = tempDir(`whisker-keys-${serviceId}-`);
    const other = serviceId === 'a' ? 'b' : 'a';
    const path = writeConfig(dir, { serviceId, isMaster: serviceId === 'a', peers: [spec(other)], socketServer: { host: '127.0.0.1', port: ports[serviceId] } });
    return { serviceId, dir, path, process: undefined as unknown as BrokerProcess };
  };
  const a = make('a');
  const b = make('b');
  const restart = async (node: Node) => void (node.process = await startProcess(node.path));
  const stop = async (node: Node) => {
    node.process.child.kill('SIGTERM');
    await node.process.exited;
  };
  return { a, b, hosts: [spec('a'), spec('b')], restart, stop };
}

/** both links up: each broker logged the other's link */
async function linked(a: Node, b: Node, fromA = 0, fromB = 0): Promise<void> {
  await Promise.all([a.process.waitFor(/"msg":"peer connected"/, fromA), b.process.waitFor(/"msg":"peer connected"/, fromB)]);
}

async function keysList(node: Node): Promise<{ keys: Array<{ name: string; fingerprint: string | null }>; revoked: number }> {
  const out = await whisker(['keys', 'list', '--json', '-c', node.path]);
  const parsed = JSON.parse(out.stdout) as { keys: Array<{ name: string; fingerprint: string | null }>; revoked: number };
  return { keys: parsed.keys.map(({ name, fingerprint }) => ({ name, fingerprint })), revoked: parsed.revoked };
}

async function stored(node: Node, queue: string): Promise<number> {
  const out = JSON.parse((await whisker(['list', '--json', '-c', node.path])).stdout) as { queues: Array<{ queue: string; messages: number }> };
  return out.queues.find((q) => q.queue === queue)?.messages ?? 0;
}

function countLines(output: string, pattern: RegExp): number {
  return output.split('\n').filter((line) => pattern.test(line)).length;
}

describe('client keys on two mirrors (real broker processes)', () => {
  for (const where of ['b', 'a'] as const) {
    test(`revoked on the ${where === 'b' ? 'slave' : 'master'}: refused by both, its sends fail with E_AUTH and nothing is stored on either; it stops redialing`, async () => {
      const { a, b, hosts, restart } = await pair();
      await restart(a);
      await restart(b);
      await linked(a, b);
      const { error, client } = await tryConnect(`svc-${where}`, hosts);
      expect(error).toBeNull();
      await until(() => client.isConnected(), 5000, 'connected');
      await client.send('orders/v1/1', { before: true });
      const errors: WhiskerError[] = [];
      client.on('error', (e: WhiskerError) => void errors.push(e));

      const revokeStarted = Date.now();
      const revoke = await whisker(['keys', 'revoke', `svc-${where}`, '-c', (where === 'a' ? a : b).path]);
      console.log(`keys revoke on ${where}, its peer connected: the CLI took ${Date.now() - revokeStarted} ms`);
      expect(revoke.code).toBe(0);
      expect(revoke.stdout).toMatch(new RegExp(`confirmed by the peers ${where === 'a' ? 'b' : 'a'}`));
      expect(revoke.stdout).not.toMatch(/NOT confirmed/);

      // the client connected to both was closed by both: one error each, the key revoked
      await until(() => !client.isConnected() && errors.length >= 2, 5000, 'closed by both brokers');
      expect(errors.map(reasonOf)).toEqual(['revoked', 'revoked']);
      const [beforeA, beforeB] = await Promise.all([stored(a, 'orders/v1'), stored(b, 'orders/v1')]);
      const sent = await client.send('orders/v1/1', { after: true }).then(() => null, (e: WhiskerError) => e);
      expect(sent?.code).toBe('E_AUTH');
      expect(reasonOf(sent)).toBe('revoked');

      // the same key through each broker alone: refused, E_AUTH revoked
      for (const host of hosts) {
        const alone = await tryConnect(`svc-${where}`, [host]);
        expect(alone.error?.code).toBe('E_AUTH');
        expect(reasonOf(alone.error)).toBe('revoked');
        await alone.client.disconnect();
      }
      // held back: no redial within a second (reconnect.initialMs is 50 ms here)
      const refusedSoFar = countLines(a.process.output() + b.process.output(), /connection refused.*svc-/);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(countLines(a.process.output() + b.process.output(), /connection refused.*svc-/)).toBe(refusedSoFar);
      expect(await Promise.all([stored(a, 'orders/v1'), stored(b, 'orders/v1')])).toEqual([beforeA, beforeB]);
      const [listA, listB] = await Promise.all([keysList(a), keysList(b)]);
      expect(listA).toEqual(listB);
      expect(listA.keys.map((k) => k.name)).not.toContain(`svc-${where}`);
    }, 60_000);
  }

  test('a name registered with two keys while the link was down: the master\'s key wins on both, the other is refused, a warning is logged', async () => {
    const { a, b, hosts, restart, stop } = await pair();
    const keys1 = freshKeys('dual');
    const keys2 = freshKeys('dual');
    await restart(a);
    const first = await tryConnect('dual', [hosts[0]!], keys1);
    expect(first.error).toBeNull();
    await first.client.disconnect();
    await stop(a);
    await restart(b);
    const second = await tryConnect('dual', [hosts[1]!], keys2);
    expect(second.error).toBeNull();
    await second.client.disconnect();

    await restart(a); // the link heals
    await linked(a, b);
    await until(() => /two keys/.test(a.process.output() + b.process.output()), 5000, 'the conflict logged');
    const warned = (a.process.output() + b.process.output()).split('\n').filter((line) => line.includes('two keys'));
    expect(warned.every((line) => line.includes('"level":"warn"') && line.includes('"client":"dual"'))).toBe(true);
    // b first: before the fix it kept its own binding, and refused the master's key
    for (const host of [...hosts].reverse()) {
      const winner = await tryConnect('dual', [host], keys1);
      expect(winner.error).toBeNull();
      await winner.client.disconnect();
      const loser = await tryConnect('dual', [host], keys2);
      expect(loser.error?.code).toBe('E_AUTH');
      expect(reasonOf(loser.error)).toBe('revoked');
      await loser.client.disconnect();
    }
    const [listA, listB] = await Promise.all([keysList(a), keysList(b)]);
    expect(listA).toEqual(listB);
    expect(listA.keys.filter((k) => k.name === 'dual')).toHaveLength(1);
    expect(listA.revoked).toBe(1);
  }, 60_000);

  test('a broker down during a revocation gets it when it is back; the CLI names the peer that did not confirm', async () => {
    const { a, b, hosts, restart, stop } = await pair();
    await restart(a);
    await restart(b);
    await linked(a, b);
    const { error, client } = await tryConnect('late', hosts);
    expect(error).toBeNull();
    await client.disconnect();
    await stop(b);

    const started = Date.now();
    const revoke = await whisker(['keys', 'revoke', 'late', '-c', a.path]);
    expect(revoke.code).toBe(0);
    expect(revoke.stdout).toMatch(/NOT confirmed by the peers b/);
    console.log(`keys revoke on a, its peer down: the CLI took ${Date.now() - started} ms`);
    expect(Date.now() - started).toBeLessThan(5000);

    const mark = a.process.output().length;
    await restart(b);
    await linked(a, b, mark, 0);
    await until(() => /"client":"late".*"msg":"key revoked by a peer"/.test(b.process.output()), 5000, 'b applied the revocation').catch((e: Error) => {
      console.log(b.process.output(), '\n------\n', a.process.output());
      throw e;
    });
    const back = await tryConnect('late', [hosts[1]!]);
    expect(back.error?.code).toBe('E_AUTH');
    expect(reasonOf(back.error)).toBe('revoked');
    const [listA, listB] = await Promise.all([keysList(a), keysList(b)]);
    expect(listA).toEqual(listB);
  }, 60_000);
});
