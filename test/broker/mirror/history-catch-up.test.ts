import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { WhiskerClient } from '../../../src/client/client.js';
import { startProcess, whisker } from '../../support/broker-process.js';
import { connect, until } from '../../support/harness.js';
import { configureMirror, type MirrorNode, mirrorNodes, replayKeys, sendMany as sendManyTo } from '../../support/mirror-nodes.js';

/**
 * The history catch-up of a mirror's sync (issue 27, SPEC §7/§9): a slave killed -9 misses the
 * retained history of what its master accepted and settled while it was away; once back and in
 * step it has it, so promoted it replays every answered send, once, in order, as its master did.
 */

type Node = MirrorNode;

const CHANNEL = 'ev/v1/1';

const configure = (node: Node, all: readonly Node[], isMaster: boolean, retention: Record<string, number>): string =>
  configureMirror(node, all, isMaster, { channels: { 'ev/v1': { retention } } });
const nodes = async (prefix: string, names = ['a', 'b']) => (await mirrorNodes(prefix, names)) as [Node, Node, ...Node[]];
const replayOf = (node: Node) => replayKeys(node, CHANNEL);
const sendMany = (producer: WhiskerClient, from: number, count: number, answered: number[]) => sendManyTo(producer, CHANNEL, from, count, answered);

async function historyBytes(node: Node): Promise<number> {
  const listed = await whisker(['list', '-c', join(node.dir, 'config.json'), '--json']);
  expect(listed.code, listed.stderr).toBe(0);
  const { histories } = JSON.parse(listed.stdout) as { histories: Array<{ queue: string; bytes: number }> };
  return histories.find((h) => h.queue === 'ev/v1')?.bytes ?? 0;
}

describe('history catch-up in the mirror sync (real broker processes)', () => {
  test('a slave killed -9 while 10,000 sends are answered and acked, restarted under traffic, then promoted: its replay has every answered send once, in order', async () => {
    const [a, b] = await nodes('catch-up');
    const retention = { seconds: 3600 };
    a.process = await startProcess(configure(a, [a, b], true, retention));
    b.process = await startProcess(configure(b, [a, b], false, retention));
    await b.process.waitFor(/in step with the master/);
    const hosts = [a.spec, b.spec];
    const consumed = new Set<number>();
    const consumer = await connect('catch-up-worker', hosts);
    await consumer.consume(CHANNEL, { prefetch: 50 }, (err, msg, done) => {
      if (err) throw err;
      consumed.add((msg as { k: number }).k);
      done!();
    }).ready;
    const producer = await connect('catch-up-producer', hosts, { sendTimeout: 20_000 });
    const answered: number[] = [];

    await sendMany(producer, 0, 500, answered);
    b.process.child.kill('SIGKILL');
    await b.process.exited;
    // while b is away: answered by a, consumed and acked (settled: no longer held anywhere)
    await sendMany(producer, 500, 10_000, answered);
    await until(() => answered.every((k) => consumed.has(k)), 30_000, 'every send consumed while the slave is away');

    // b comes back while the producer keeps sending: its own writes and the catch-up must not cross
    const during = sendMany(producer, 10_500, 3_000, answered);
    b.process = await startProcess(configure(b, [a, b], false, retention));
    await b.process.waitFor(/in step with the master/, 0, 30_000);
    await during;
    await sendMany(producer, 13_500, 500, answered);
    await until(() => answered.every((k) => consumed.has(k)), 30_000, 'every send consumed');
    await new Promise((resolve) => setTimeout(resolve, 500)); // the last feed frames reach b
    const fromMaster = await replayOf(a);

    a.process.child.kill('SIGKILL');
    await a.process.exited;
    const from = b.process.output().length;
    configure(b, [a, b], true, retention); // the file watch reloads it
    await b.process.waitFor(/delivering: this broker acts as master/, from);
    const fromPromoted = await replayOf(b);
    await Promise.all([producer.disconnect(), consumer.disconnect()]);

    const seen = new Set(fromPromoted);
    const missing = answered.filter((k) => !seen.has(k));
    const outOfOrder = fromPromoted.filter((k, i) => i > 0 && k < fromPromoted[i - 1]!).length;
    console.log(`history catch-up: ${answered.length} answered OK, master replayed ${fromMaster.length}, promoted slave replayed ${fromPromoted.length}: ${missing.length} missing, ${fromPromoted.length - seen.size} twice, ${outOfOrder} out of order`);
    expect(missing.length, `missing e.g. ${missing.slice(0, 5).join(', ')}`).toBe(0);
    expect(fromPromoted.length - seen.size).toBe(0);
    expect(outOfOrder).toBe(0);
    expect(fromPromoted).toEqual(fromMaster);
  }, 180_000);

  test('a slave far behind gets no more than retention keeps: maxBytes holds on it and it replays what its master does', async () => {
    const [a, b] = await nodes('catch-up-bytes');
    const retention = { maxBytes: 262_144 };
    a.process = await startProcess(configure(a, [a, b], true, retention));
    b.process = await startProcess(configure(b, [a, b], false, retention));
    await b.process.waitFor(/in step with the master/);
    // connected to the master only: the slave gets nothing from it directly, not even when back
    const producer = await connect('bytes-producer', a.spec);
    const consumed = new Set<number>();
    const consumer = await connect('bytes-worker', a.spec);
    await consumer.consume(CHANNEL, { prefetch: 50 }, (err, msg, done) => {
      if (err) throw err;
      consumed.add((msg as { k: number }).k);
      done!();
    }).ready;
    const answered: number[] = [];
    await sendMany(producer, 0, 200, answered);
    b.process.child.kill('SIGKILL');
    await b.process.exited;
    await sendMany(producer, 200, 20_000, answered);
    await until(() => answered.every((k) => consumed.has(k)), 30_000, 'every send consumed while the slave is away');
    await consumer.disconnect();
    b.process = await startProcess(configure(b, [a, b], false, retention));
    await b.process.waitFor(/in step with the master/, 0, 30_000);
    await producer.disconnect();

    const fromMaster = await replayOf(a);
    const fromSlave = await replayOf(b);
    const [masterBytes, slaveBytes] = [await historyBytes(a), await historyBytes(b)];
    console.log(`catch-up within maxBytes 262,144: master keeps ${fromMaster.length} records (${masterBytes} B), slave ${fromSlave.length} (${slaveBytes} B)`);
    expect(fromMaster.length).toBeGreaterThan(1_000);
    expect(fromMaster.at(-1)).toBe(answered.at(-1));
    expect(slaveBytes).toBeLessThanOrEqual(retention.maxBytes);
    // each trims whole files of its own: one may keep a few older records than the other
    expect(fromSlave.length).toBeGreaterThan(fromMaster.length / 2);
    const start = fromMaster.indexOf(fromSlave[0]!);
    if (start >= 0) expect(fromSlave).toEqual(fromMaster.slice(start));
    else expect(fromSlave.slice(fromSlave.indexOf(fromMaster[0]!))).toEqual(fromMaster);
  }, 120_000);

  test('a slave whose master dies follows the promoted slave under traffic: in step again, and it replays what the new master does', async () => {
    const [a, b, c] = (await nodes('catch-up-three', ['a', 'b', 'c'])) as [Node, Node, Node];
    const all = [a, b, c];
    const retention = { seconds: 3600 };
    a.process = await startProcess(configure(a, all, true, retention));
    b.process = await startProcess(configure(b, all, false, retention));
    c.process = await startProcess(configure(c, all, false, retention));
    await Promise.all([b.process.waitFor(/in step with the master/), c.process.waitFor(/in step with the master/)]);
    const hosts = all.map((n) => n.spec);
    const consumed = new Set<number>();
    const consumer = await connect('three-worker', hosts);
    await consumer.consume(CHANNEL, { prefetch: 50 }, (err, msg, done) => {
      if (err) throw err;
      consumed.add((msg as { k: number }).k);
      done!();
    }).ready;
    const producer = await connect('three-producer', hosts, { sendTimeout: 20_000 });
    const answered: number[] = [];
    let k = 0;
    let sending = true;
    const pacer = (async () => {
      while (sending) {
        const batch = Array.from({ length: 20 }, () => k++);
        const outcomes = await Promise.allSettled(batch.map((n) => producer.send(CHANNEL, { k: n })));
        outcomes.forEach((o, i) => o.status === 'fulfilled' && answered.push(batch[i]!));
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    await until(() => answered.length >= 3_000, 30_000, '3,000 answered');
    const fromC = c.process.output().length;
    a.process.child.kill('SIGKILL');
    await a.process.exited;
    configure(b, all, true, retention);
    await b.process.waitFor(/delivering: this broker acts as master/);
    await c.process.waitFor(/in step with the master/, fromC, 30_000);
    await until(() => answered.length >= 6_000, 30_000, '6,000 answered');
    sending = false;
    await pacer;
    await until(() => answered.every((n) => consumed.has(n)), 30_000, 'every send consumed');
    await new Promise((resolve) => setTimeout(resolve, 500));
    await Promise.all([producer.disconnect(), consumer.disconnect()]);
    const [fromMaster, fromSlave] = [await replayOf(b), await replayOf(c)];
    const seen = new Set(fromSlave);
    const missing = answered.filter((n) => !seen.has(n));
    const outOfOrder = fromSlave.filter((n, i) => i > 0 && n < fromSlave[i - 1]!).length;
    console.log(`three mirrors: ${answered.length} answered OK, new master replayed ${fromMaster.length}, its slave ${fromSlave.length}: ${missing.length} missing, ${fromSlave.length - seen.size} twice, ${outOfOrder} out of order`);
    expect(missing.length).toBe(0);
    expect(fromSlave.length - seen.size).toBe(0);
    expect(outOfOrder).toBe(0);
  }, 120_000);
});
