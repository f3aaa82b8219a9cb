import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { WhiskerClient } from '../../../src/client/client.js';
import { startProcess, whisker } from '../../support/broker-process.js';
import { connect, until } from '../../support/harness.js';
import { configureMirror, type MirrorNode, mirrorNodes, replayKeys, sendMany as sendManyTo } from '../../support/mirror-nodes.js';

/**
 * Outside check of issue 27's history catch-up and a following slave's limits (atk27), with
 * real broker processes: a slave killed -9 again and again in the middle of its catch-up, a
 * chain of three, retention on the catching-up slave, drop-oldest on a slave while the master
 * holds deliveries unacked, then failover.
 */

type Node = MirrorNode;

const CHANNEL = 'ev/v1/1';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const configure = configureMirror;
const nodes = mirrorNodes;
const replayOf = (node: Node) => replayKeys(node, CHANNEL);
const sendMany = (producer: WhiskerClient, from: number, count: number, answered: number[]) => sendManyTo(producer, CHANNEL, from, count, answered);

async function listed(node: Node): Promise<{ queues: Array<{ name: string; depth: number; inFlight?: number }>; histories: Array<{ queue: string; bytes: number; messages?: number }> }> {
  const out = await whisker(['list', '-c', join(node.dir, 'config.json'), '--json']);
  expect(out.code, out.stderr).toBe(0);
  return JSON.parse(out.stdout);
}

function verdict(label: string, answered: number[], replay: number[]) {
  const seen = new Set(replay);
  const missing = answered.filter((k) => !seen.has(k));
  const twice = replay.length - seen.size;
  const outOfOrder = replay.filter((k, i) => i > 0 && k < replay[i - 1]!).length;
  const breaks = replay.flatMap((k, i) => (i > 0 && k < replay[i - 1]! ? [`${replay.slice(Math.max(0, i - 2), i + 2).join(',')}`] : []));
  if (breaks.length) console.log(`${label} order breaks: ${breaks.slice(0, 8).join(' | ')}`);
  const runs: string[] = [];
  for (const k of missing) {
    const last = runs.at(-1)?.split('-');
    if (last && Number(last.at(-1)) === k - 1) runs[runs.length - 1] = `${last[0]}-${k}`;
    else runs.push(String(k));
  }
  if (runs.length) console.log(`${label} missing ranges: ${runs.slice(0, 20).join(' ')}; replay starts ${replay.slice(0, 3).join(',')} ends ${replay.slice(-3).join(',')}`);
  console.log(`${label}: ${answered.length} answered, replay ${replay.length}: ${missing.length} missing (e.g. ${missing.slice(0, 5).join(',')}), ${twice} twice, ${outOfOrder} out of order`);
  return { missing: missing.length, twice, outOfOrder };
}

// The attacks themselves run for minutes (eight kill -9 cycles over 30,000+ records each): CI's
// 20-minute budget cannot hold them beside the suite and the nemesis, so they are opt-in
// (ATTACKS=1 npx vitest run test/broker/mirror/catch-up-attacks.test.ts). The ttl regression
// test below runs always.
const attacks = process.env.ATTACKS === '1';
if (!attacks) console.warn('catch-up attacks: skipped (minutes of kill -9 cycles); ATTACKS=1 runs them');

describe.runIf(attacks)('atk27: history catch-up under repeated kill -9 (real processes)', () => {
  test('a slave killed -9 eight times in the middle of its catch-up while the master takes sends, then promoted: replay has every answered send once, in order', async () => {
    const [a, b] = (await nodes('atk-mid', ['a', 'b'])) as [Node, Node];
    const extra = { channels: { 'ev/v1': { retention: { seconds: 3600 } } } };
    a.process = await startProcess(configure(a, [a, b], true, extra));
    b.process = await startProcess(configure(b, [a, b], false, extra));
    await b.process.waitFor(/in step with the master/);
    // producer and consumer on the master only: the documented reorder after a client
    // (re)connects to a slave does not apply
    const producer = await connect('mid-producer', a.spec, { sendTimeout: 20_000 });
    const consumed = new Set<number>();
    const consumer = await connect('mid-worker', a.spec);
    await consumer.consume(CHANNEL, { prefetch: 100 }, (err, msg, done) => {
      if (err) throw err;
      consumed.add((msg as { k: number }).k);
      done!();
    }).ready;
    const answered: number[] = [];
    await sendMany(producer, 0, 1_000, answered);
    b.process.child.kill('SIGKILL');
    await b.process.exited;
    await sendMany(producer, 1_000, 30_000, answered);
    let next = 31_000;
    let sending = true;
    const pacer = (async () => {
      while (sending) {
        await sendMany(producer, next, 100, answered);
        next += 100;
        await sleep(5);
      }
    })();
    for (let round = 0; round < 8; round++) {
      b.process = await startProcess(configure(b, [a, b], false, extra));
      await sleep(50 + ((round * 373) % 1500));
      const mid = !/in step with the master/.test(b.process.output());
      console.log(`round ${round}: kill -9 ${mid ? 'in the middle of' : 'after'} the catch-up`);
      b.process.child.kill('SIGKILL');
      await b.process.exited;
    }
    const started = Date.now();
    b.process = await startProcess(configure(b, [a, b], false, extra));
    await b.process.waitFor(/in step with the master/, 0, 60_000);
    const sent = a.process.output().split('\n').filter((l) => /history catch-up sent/.test(l));
    console.log(`final catch-up: in step ${Date.now() - started} ms after spawn; master logged ${sent.length} catch-ups sent: ${sent.map((l) => l.slice(0, 300)).join(' | ')}`);
    await sleep(1_000);
    sending = false;
    await pacer;
    await until(() => answered.every((k) => consumed.has(k)), 30_000, 'every send consumed');
    await sleep(500);
    const fromMaster = await replayOf(a);
    const [la, lb] = [await listed(a), await listed(b)];
    console.log('whisker list a', JSON.stringify(la.histories), JSON.stringify(la.queues), '\nwhisker list b', JSON.stringify(lb.histories), JSON.stringify(lb.queues));
    a.process.child.kill('SIGKILL');
    await a.process.exited;
    const from = b.process.output().length;
    configure(b, [a, b], true, extra);
    await b.process.waitFor(/delivering: this broker acts as master/, from);
    const fromPromoted = await replayOf(b);
    await Promise.all([producer.disconnect(), consumer.disconnect()]);
    verdict('master', answered, fromMaster);
    const v = verdict('promoted slave after 8 kills mid-catch-up', answered, fromPromoted);
    expect(v).toEqual({ missing: 0, twice: 0, outOfOrder: 0 });
    expect(fromPromoted).toEqual(fromMaster);
  }, 300_000);

  test('clients of both brokers (as docs/client.md says): the slave killed -9 eight times mid-catch-up, then promoted: replay has every answered send once', async () => {
    const [a, b] = (await nodes('atk-mid2', ['a', 'b'])) as [Node, Node];
    const extra = { channels: { 'ev/v1': { retention: { seconds: 3600 } } } };
    a.process = await startProcess(configure(a, [a, b], true, extra));
    b.process = await startProcess(configure(b, [a, b], false, extra));
    await b.process.waitFor(/in step with the master/);
    // producer and consumer on the master only: the documented reorder after a client
    // (re)connects to a slave does not apply
    const producer = await connect('mid-producer', [a.spec, b.spec], { sendTimeout: 20_000 });
    const consumed = new Set<number>();
    const consumer = await connect('mid-worker', [a.spec, b.spec]);
    await consumer.consume(CHANNEL, { prefetch: 100 }, (err, msg, done) => {
      if (err) throw err;
      consumed.add((msg as { k: number }).k);
      done!();
    }).ready;
    const answered: number[] = [];
    await sendMany(producer, 0, 1_000, answered);
    b.process.child.kill('SIGKILL');
    await b.process.exited;
    await sendMany(producer, 1_000, 30_000, answered);
    let next = 31_000;
    let sending = true;
    const pacer = (async () => {
      while (sending) {
        await sendMany(producer, next, 100, answered);
        next += 100;
        await sleep(5);
      }
    })();
    for (let round = 0; round < 8; round++) {
      b.process = await startProcess(configure(b, [a, b], false, extra));
      await sleep(50 + ((round * 373) % 1500));
      const mid = !/in step with the master/.test(b.process.output());
      console.log(`round ${round}: kill -9 ${mid ? 'in the middle of' : 'after'} the catch-up`);
      b.process.child.kill('SIGKILL');
      await b.process.exited;
    }
    const started = Date.now();
    b.process = await startProcess(configure(b, [a, b], false, extra));
    await b.process.waitFor(/in step with the master/, 0, 60_000);
    const sent = a.process.output().split('\n').filter((l) => /history catch-up sent/.test(l));
    console.log(`final catch-up: in step ${Date.now() - started} ms after spawn; master logged ${sent.length} catch-ups sent: ${sent.map((l) => l.slice(0, 300)).join(' | ')}`);
    await sleep(1_000);
    sending = false;
    await pacer;
    await until(() => answered.every((k) => consumed.has(k)), 30_000, 'every send consumed');
    await sleep(500);
    const fromMaster = await replayOf(a);
    const [la, lb] = [await listed(a), await listed(b)];
    console.log('whisker list a', JSON.stringify(la.histories), JSON.stringify(la.queues), '\nwhisker list b', JSON.stringify(lb.histories), JSON.stringify(lb.queues));
    a.process.child.kill('SIGKILL');
    await a.process.exited;
    const from = b.process.output().length;
    configure(b, [a, b], true, extra);
    await b.process.waitFor(/delivering: this broker acts as master/, from);
    const fromPromoted = await replayOf(b);
    await Promise.all([producer.disconnect(), consumer.disconnect()]);
    verdict('master', answered, fromMaster);
    const v = verdict('promoted slave after 8 kills mid-catch-up', answered, fromPromoted);
    // order: docs/operations.md#history-catch-up allows late records of a (re)connected client
    expect({ missing: v.missing, twice: v.twice }).toEqual({ missing: 0, twice: 0 });
    expect(new Set(fromPromoted)).toEqual(new Set(fromMaster));
  }, 300_000);

  test('a chain of three: the last slave killed -9 mid-catch-up, the master killed -9, b promoted: c follows b and both replay every answered send', async () => {
    const [a, b, c] = (await nodes('atk-three', ['a', 'b', 'c'])) as [Node, Node, Node];
    const all = [a, b, c];
    const extra = { channels: { 'ev/v1': { retention: { seconds: 3600 } } } };
    a.process = await startProcess(configure(a, all, true, extra));
    b.process = await startProcess(configure(b, all, false, extra));
    c.process = await startProcess(configure(c, all, false, extra));
    await Promise.all([b.process.waitFor(/in step with the master/), c.process.waitFor(/in step with the master/)]);
    const producer = await connect('three-producer', a.spec, { sendTimeout: 20_000 });
    const answered: number[] = [];
    await sendMany(producer, 0, 500, answered);
    c.process.child.kill('SIGKILL');
    await c.process.exited;
    await sendMany(producer, 500, 20_000, answered);
    for (let round = 0; round < 4; round++) {
      c.process = await startProcess(configure(c, all, false, extra));
      await sleep(100 + round * 90);
      c.process.child.kill('SIGKILL');
      await c.process.exited;
    }
    c.process = await startProcess(configure(c, all, false, extra));
    await c.process.waitFor(/in step with the master/, 0, 60_000);
    await sendMany(producer, 20_500, 500, answered);
    await producer.disconnect();
    await sleep(500);
    a.process.child.kill('SIGKILL');
    await a.process.exited;
    const fromC = c.process.output().length;
    configure(b, all, true, extra);
    await b.process.waitFor(/delivering: this broker acts as master/);
    await c.process.waitFor(/in step with the master/, fromC, 30_000);
    // more through the new master, c must follow them too
    const producer2 = await connect('three-producer2', b.spec, { sendTimeout: 20_000 });
    await sendMany(producer2, 21_000, 1_000, answered);
    await producer2.disconnect();
    await sleep(500);
    const fromB = await replayOf(b);
    const fromCr = await replayOf(c);
    const vb = verdict('promoted b', answered, fromB);
    const vc = verdict('c following b', answered, fromCr);
    console.log('whisker list b', JSON.stringify((await listed(b)).histories), 'c', JSON.stringify((await listed(c)).histories));
    expect(vb).toEqual({ missing: 0, twice: 0, outOfOrder: 0 });
    expect(vc).toEqual({ missing: 0, twice: 0, outOfOrder: 0 });
    expect(fromCr).toEqual(fromB);
  }, 300_000);

  test('retention.seconds 3 on a slave that catches up: it keeps nothing older than the master does, and the expired records go from its disk', async () => {
    const [a, b] = (await nodes('atk-secs', ['a', 'b'])) as [Node, Node];
    const extra = { channels: { 'ev/v1': { retention: { seconds: 3 } } } };
    a.process = await startProcess(configure(a, [a, b], true, extra));
    b.process = await startProcess(configure(b, [a, b], false, extra));
    await b.process.waitFor(/in step with the master/);
    const producer = await connect('secs-producer', a.spec);
    const answered: number[] = [];
    await sendMany(producer, 0, 200, answered);
    b.process.child.kill('SIGKILL');
    await b.process.exited;
    await sendMany(producer, 200, 5_000, answered);
    await sleep(3_500); // all of those past retention on the master
    await sendMany(producer, 5_200, 300, answered); // these are young
    b.process = await startProcess(configure(b, [a, b], false, extra));
    await b.process.waitFor(/in step with the master/, 0, 30_000);
    const fromMaster = await replayOf(a);
    const fromSlave = await replayOf(b);
    console.log(`seconds 3: master replays ${fromMaster.length} (first ${fromMaster[0]}), slave ${fromSlave.length} (first ${fromSlave[0]})`);
    expect(fromSlave.every((k) => k >= 5_200)).toBe(true);
    expect(fromSlave).toEqual(fromMaster);
    await producer.disconnect();
    await sleep(11_000); // past retention and two periodic trims
    const [la, lb] = [await listed(a), await listed(b)];
    console.log('after expiry: whisker list a', JSON.stringify(la.histories), 'b', JSON.stringify(lb.histories));
    expect(await replayOf(b)).toEqual([]);
    expect(lb.histories.find((h) => h.queue === 'ev/v1')?.bytes ?? 0).toBe(0);
  }, 120_000);

  test('maxBytes on a slave killed -9 mid-catch-up: its history stays within maxBytes and is a tail of the master\'s', async () => {
    const [a, b] = (await nodes('atk-bytes', ['a', 'b'])) as [Node, Node];
    const extra = { channels: { 'ev/v1': { retention: { maxBytes: 65_536 } } } };
    a.process = await startProcess(configure(a, [a, b], true, extra));
    b.process = await startProcess(configure(b, [a, b], false, extra));
    await b.process.waitFor(/in step with the master/);
    const producer = await connect('bytes-producer', a.spec);
    const answered: number[] = [];
    await sendMany(producer, 0, 200, answered);
    b.process.child.kill('SIGKILL');
    await b.process.exited;
    await sendMany(producer, 200, 20_000, answered);
    for (let round = 0; round < 3; round++) {
      b.process = await startProcess(configure(b, [a, b], false, extra));
      await sleep(80 + round * 100);
      b.process.child.kill('SIGKILL');
      await b.process.exited;
    }
    b.process = await startProcess(configure(b, [a, b], false, extra));
    await b.process.waitFor(/in step with the master/, 0, 30_000);
    await producer.disconnect();
    const fromMaster = await replayOf(a);
    const fromSlave = await replayOf(b);
    const [la, lb] = [await listed(a), await listed(b)];
    const bytes = (l: typeof la) => l.histories.find((h) => h.queue === 'ev/v1')?.bytes ?? 0;
    console.log(`maxBytes 65,536: master ${fromMaster.length} records ${bytes(la)} B, slave ${fromSlave.length} records ${bytes(lb)} B`);
    expect(bytes(lb)).toBeLessThanOrEqual(65_536);
    expect(fromSlave.at(-1)).toBe(answered.at(-1));
    const start = fromMaster.indexOf(fromSlave[0]!);
    if (start >= 0) expect(fromSlave).toEqual(fromMaster.slice(start));
    else expect(fromSlave.slice(fromSlave.indexOf(fromMaster[0]!))).toEqual(fromMaster);
  }, 120_000);

  test('maxItemsInQueue 10 drop-oldest: a consumer holds 5 unacked on the master, the slave killed -9 and back, the master killed -9: the promoted slave delivers all 15', async () => {
    const [a, b] = (await nodes('atk-drop', ['a', 'b'])) as [Node, Node];
    const extra = { maxItemsInQueue: 10, overflow: 'drop-oldest', requeueInterval: 60 };
    a.process = await startProcess(configure(a, [a, b], true, extra));
    b.process = await startProcess(configure(b, [a, b], false, extra));
    await b.process.waitFor(/in step with the master/);
    const holder = await connect('holder', a.spec, { dedupeWindow: 0 });
    const held: number[] = [];
    await holder.consume('jobs/v1/*', { prefetch: 5 }, (_err, msg) => void held.push((msg as { n: number }).n)).ready;
    const producer = await connect('drop-producer', [a.spec, b.spec]);
    for (let n = 0; n < 5; n++) await producer.send('jobs/v1/1', { n });
    await until(() => held.length === 5, 5000, '5 in flight');
    b.process.child.kill('SIGKILL');
    await b.process.exited;
    for (let n = 5; n < 15; n++) await producer.send('jobs/v1/1', { n });
    b.process = await startProcess(configure(b, [a, b], false, extra));
    await b.process.waitFor(/in step with the master/, 0, 30_000);
    await sleep(500);
    const [la, lb] = [await listed(a), await listed(b)];
    console.log('whisker list a', JSON.stringify(la.queues), '\nwhisker list b', JSON.stringify(lb.queues));
    await producer.disconnect();
    a.process.child.kill('SIGKILL');
    await a.process.exited;
    await holder.disconnect();
    const from = b.process.output().length;
    configure(b, [a, b], true, extra);
    await b.process.waitFor(/delivering: this broker acts as master/, from);
    const consumer = await connect('drop-worker', b.spec, { dedupeWindow: 0 });
    const got = new Set<number>();
    await consumer.consume('jobs/v1/*', { prefetch: 20 }, (_err, msg, done) => {
      got.add((msg as { n: number }).n);
      done!();
    }).ready;
    await until(() => got.size === 15, 10_000, `15 delivered by the promoted slave (${[...got].sort((x, y) => x - y).join(',')})`).catch(() => undefined);
    console.log(`drop-oldest: promoted slave delivered ${got.size}: ${[...got].sort((x, y) => x - y).join(',')}`);
    await consumer.disconnect();
    expect([...got].sort((x, y) => x - y)).toEqual(Array.from({ length: 15 }, (_, n) => n));
  }, 120_000);

  test('maxItemsInQueue 10 drop-oldest: the slave holds 15 (5 in flight on the master) when killed -9, restarts from its store, then the master is killed -9: the promoted slave delivers all 15', async () => {
    const [a, b] = (await nodes('atk-drop', ['a', 'b'])) as [Node, Node];
    const extra = { maxItemsInQueue: 10, overflow: 'drop-oldest', requeueInterval: 60 };
    a.process = await startProcess(configure(a, [a, b], true, extra));
    b.process = await startProcess(configure(b, [a, b], false, extra));
    await b.process.waitFor(/in step with the master/);
    const holder = await connect('holder', a.spec, { dedupeWindow: 0 });
    const held: number[] = [];
    await holder.consume('jobs/v1/*', { prefetch: 5 }, (_err, msg) => void held.push((msg as { n: number }).n)).ready;
    const producer = await connect('drop-producer', [a.spec, b.spec]);
    for (let n = 0; n < 5; n++) await producer.send('jobs/v1/1', { n });
    await until(() => held.length === 5, 5000, '5 in flight');
    for (let n = 5; n < 15; n++) await producer.send('jobs/v1/1', { n });
    await sleep(300);
    b.process.child.kill('SIGKILL');
    await b.process.exited;
    b.process = await startProcess(configure(b, [a, b], false, extra));
    await b.process.waitFor(/in step with the master/, 0, 30_000);
    await sleep(500);
    const [la, lb] = [await listed(a), await listed(b)];
    console.log('whisker list a', JSON.stringify(la.queues), '\nwhisker list b', JSON.stringify(lb.queues));
    await producer.disconnect();
    a.process.child.kill('SIGKILL');
    await a.process.exited;
    await holder.disconnect();
    const from = b.process.output().length;
    configure(b, [a, b], true, extra);
    await b.process.waitFor(/delivering: this broker acts as master/, from);
    const consumer = await connect('drop-worker', b.spec, { dedupeWindow: 0 });
    const got = new Set<number>();
    await consumer.consume('jobs/v1/*', { prefetch: 20 }, (_err, msg, done) => {
      got.add((msg as { n: number }).n);
      done!();
    }).ready;
    await until(() => got.size === 15, 10_000, `15 delivered by the promoted slave (${[...got].sort((x, y) => x - y).join(',')})`).catch(() => undefined);
    console.log(`drop-oldest: promoted slave delivered ${got.size}: ${[...got].sort((x, y) => x - y).join(',')}`);
    await consumer.disconnect();
    expect([...got].sort((x, y) => x - y)).toEqual(Array.from({ length: 15 }, (_, n) => n));
  }, 120_000);

  test('maxItemsInQueue 10 drop-oldest past the bound: the master drops 10 waiting while the slave is away and more while it catches up; the promoted slave holds exactly what the master held', async () => {
    const [a, b] = (await nodes('atk-drop', ['a', 'b'])) as [Node, Node];
    const extra = { maxItemsInQueue: 10, overflow: 'drop-oldest', requeueInterval: 60 };
    a.process = await startProcess(configure(a, [a, b], true, extra));
    b.process = await startProcess(configure(b, [a, b], false, extra));
    await b.process.waitFor(/in step with the master/);
    const holder = await connect('holder', a.spec, { dedupeWindow: 0 });
    const held: number[] = [];
    await holder.consume('jobs/v1/*', { prefetch: 5 }, (_err, msg) => void held.push((msg as { n: number }).n)).ready;
    const producer = await connect('drop-producer', [a.spec, b.spec]);
    for (let n = 0; n < 5; n++) await producer.send('jobs/v1/1', { n });
    await until(() => held.length === 5, 5000, '5 in flight');
    b.process.child.kill('SIGKILL');
    await b.process.exited;
    for (let n = 5; n < 25; n++) await producer.send('jobs/v1/1', { n });
    b.process = await startProcess(configure(b, [a, b], false, extra));
    for (let n = 25; n < 30; n++) await producer.send('jobs/v1/1', { n });
    await b.process.waitFor(/in step with the master/, 0, 30_000);
    await sleep(500);
    const [la, lb] = [await listed(a), await listed(b)];
    console.log('whisker list a', JSON.stringify(la.queues), '\nwhisker list b', JSON.stringify(lb.queues));
    await producer.disconnect();
    a.process.child.kill('SIGKILL');
    await a.process.exited;
    await holder.disconnect();
    const from = b.process.output().length;
    configure(b, [a, b], true, extra);
    await b.process.waitFor(/delivering: this broker acts as master/, from);
    const consumer = await connect('drop-worker', b.spec, { dedupeWindow: 0 });
    const got = new Set<number>();
    await consumer.consume('jobs/v1/*', { prefetch: 20 }, (_err, msg, done) => {
      got.add((msg as { n: number }).n);
      done!();
    }).ready;
    await until(() => got.size === 15 && got.has(29), 10_000, `15 delivered by the promoted slave (${[...got].sort((x, y) => x - y).join(',')})`).catch(() => undefined);
    console.log(`drop-oldest: promoted slave delivered ${got.size}: ${[...got].sort((x, y) => x - y).join(',')}`);
    await consumer.disconnect();
    expect([...got].sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29]);
  }, 120_000);

  test('the master killed -9 and restarted in the middle of a slave\'s catch-up, three times: the slave ends in step and replays what the master does', async () => {
    const [a, b] = (await nodes('atk-master-mid', ['a', 'b'])) as [Node, Node];
    const extra = { channels: { 'ev/v1': { retention: { seconds: 3600 } } } };
    a.process = await startProcess(configure(a, [a, b], true, extra));
    b.process = await startProcess(configure(b, [a, b], false, extra));
    await b.process.waitFor(/in step with the master/);
    const answered: number[] = [];
    let producer = await connect('mm-producer', a.spec, { sendTimeout: 20_000 });
    await sendMany(producer, 0, 500, answered);
    b.process.child.kill('SIGKILL');
    await b.process.exited;
    await sendMany(producer, 500, 40_000, answered);
    await producer.disconnect();
    b.process = await startProcess(configure(b, [a, b], false, extra));
    for (let round = 0; round < 3; round++) {
      await sleep(150 + round * 200);
      const mid = !/in step with the master/.test(b.process.output());
      console.log(`master kill ${round}: slave ${mid ? 'mid-catch-up' : 'in step already'}`);
      a.process.child.kill('SIGKILL');
      await a.process.exited;
      a.process = await startProcess(configure(a, [a, b], true, extra));
    }
    const from = b.process.output().length;
    await b.process.waitFor(/in step with the master/, from, 60_000).catch(() => undefined);
    producer = await connect('mm-producer2', a.spec, { sendTimeout: 20_000 });
    await sendMany(producer, 40_500, 500, answered);
    await producer.disconnect();
    await sleep(1_000);
    const fromMaster = await replayOf(a);
    const fromSlave = await replayOf(b);
    verdict('master', answered, fromMaster);
    const v = verdict('slave after master kills mid-catch-up', answered, fromSlave);
    expect(v).toEqual({ missing: 0, twice: 0, outOfOrder: 0 });
    expect(fromSlave).toEqual(fromMaster);
  }, 300_000);

  test('a slave with a smaller maxBytes and seconds than its master: after the catch-up it keeps its own bound', async () => {
    const [a, b] = (await nodes('atk-smaller', ['a', 'b'])) as [Node, Node];
    const big = { channels: { 'ev/v1': { retention: { maxBytes: 8_000_000 } } } };
    const small = { channels: { 'ev/v1': { retention: { maxBytes: 65_536, seconds: 600 } } } };
    a.process = await startProcess(configure(a, [a, b], true, big));
    b.process = await startProcess(configure(b, [a, b], false, small));
    await b.process.waitFor(/in step with the master/);
    const producer = await connect('small-producer', a.spec);
    const answered: number[] = [];
    await sendMany(producer, 0, 200, answered);
    b.process.child.kill('SIGKILL');
    await b.process.exited;
    await sendMany(producer, 200, 20_000, answered);
    b.process = await startProcess(configure(b, [a, b], false, small));
    await b.process.waitFor(/in step with the master/, 0, 30_000);
    await sendMany(producer, 20_200, 2_000, answered);
    await producer.disconnect();
    await sleep(6_000); // a periodic trim
    const fromMaster = await replayOf(a);
    const fromSlave = await replayOf(b);
    const [la, lb] = [await listed(a), await listed(b)];
    const bytes = (l: typeof la) => l.histories.find((h) => h.queue === 'ev/v1')?.bytes ?? 0;
    console.log(`smaller bound on the slave: master ${fromMaster.length} records ${bytes(la)} B, slave ${fromSlave.length} records ${bytes(lb)} B`);
    expect(fromMaster.length).toBe(answered.length);
    expect(bytes(lb)).toBeLessThanOrEqual(65_536);
    expect(fromSlave.at(-1)).toBe(answered.at(-1));
    expect(fromSlave).toEqual(fromMaster.slice(fromMaster.indexOf(fromSlave[0]!)));
  }, 120_000);

  test('steady state, one producer connection on both brokers, no restart: the promoted slave replays in the send order', async () => {
    const [a, b] = (await nodes('atk-steady', ['a', 'b'])) as [Node, Node];
    const extra = { channels: { 'ev/v1': { retention: { seconds: 3600 } } } };
    a.process = await startProcess(configure(a, [a, b], true, extra));
    b.process = await startProcess(configure(b, [a, b], false, extra));
    await b.process.waitFor(/in step with the master/);
    const producer = await connect('steady-producer', [a.spec, b.spec], { sendTimeout: 20_000 });
    await sleep(500); // both links up
    const answered: number[] = [];
    await sendMany(producer, 0, 40_000, answered);
    await producer.disconnect();
    await sleep(500);
    const fromMaster = await replayOf(a);
    a.process.child.kill('SIGKILL');
    await a.process.exited;
    const from = b.process.output().length;
    configure(b, [a, b], true, extra);
    await b.process.waitFor(/delivering: this broker acts as master/, from);
    const fromPromoted = await replayOf(b);
    verdict('master', answered, fromMaster);
    const v = verdict('promoted slave, steady state', answered, fromPromoted);
    expect(v).toEqual({ missing: 0, twice: 0, outOfOrder: 0 });
  }, 120_000);
});

// the regression test of the fix this attack found (a restarted slave expired deliveries in flight on
// its master): always on
describe('atk27: a restarted slave and its master\'s ttl (real processes)', () => {
  test('ttl 1 s: a slave killed -9 and restarted past the ttl while the master holds 3 deliveries unacked: in step again it still holds the 3 (whisker list)', async () => {
    const [a, b] = (await nodes('atk-ttl', ['a', 'b'])) as [Node, Node];
    const extra = { requeueInterval: 60, channels: { 'jobs/v1': { ttl: 1 } } };
    a.process = await startProcess(configure(a, [a, b], true, extra));
    b.process = await startProcess(configure(b, [a, b], false, extra));
    await b.process.waitFor(/in step with the master/);
    const holder = await connect('ttl-holder', a.spec, { dedupeWindow: 0 });
    const held: number[] = [];
    await holder.consume('jobs/v1/*', { prefetch: 3 }, (_err, msg) => void held.push((msg as { n: number }).n)).ready;
    const producer = await connect('ttl-producer', [a.spec, b.spec]);
    for (let n = 0; n < 3; n++) await producer.send('jobs/v1/1', { n });
    await until(() => held.length === 3, 5000, '3 in flight');
    await sleep(300);
    b.process.child.kill('SIGKILL');
    await b.process.exited;
    await sleep(2_000); // past the ttl, still in flight on the master
    b.process = await startProcess(configure(b, [a, b], false, extra));
    await b.process.waitFor(/in step with the master/, 0, 30_000);
    await sleep(2_500); // the slave's own expiry would have run by now
    const [la, lb] = [await listed(a), await listed(b)];
    console.log('ttl: whisker list a', JSON.stringify(la.queues), '\nwhisker list b', JSON.stringify(lb.queues));
    const count = (l: typeof la) => l.queues.find((q) => q.name === 'jobs/v1' || (q as unknown as { queue?: string }).queue === 'jobs/v1');
    expect((count(la) as unknown as { messages: number }).messages).toBe(3);
    expect((count(lb) as unknown as { messages: number } | undefined)?.messages ?? 0).toBe(3);
    await Promise.all([holder.disconnect(), producer.disconnect()]);
  }, 60_000);
});
