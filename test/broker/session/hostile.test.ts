import '../../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { WebSocket } from 'ws';
import { CLIENT_NAME } from '../../../src/broker/session/keys.js';
import type { Done } from '../../../src/client/types.js';
import { broker, clientConfig, connect, Inbox, once, type TestBroker, unconnected, until } from '../../support/harness.js';
import { fuzzCase } from '../../support/fuzz-frames.js';
import { FuzzLane, newTally } from '../../support/fuzz-lane.js';
import { newKeyPair, RawPeer } from '../../support/raw-peer.js';
import { SlowReader } from '../../support/slow-reader.js';

/**
 * Hostile peers against a live broker (issue 3, docs/security.md): random and broken frames,
 * valid requests aimed at the broker's weak spots, many sockets, a reader that stops reading.
 * Every test also fails on an uncaught exception or unhandled rejection (support/uncaught.ts).
 */
const MB = 1024 * 1024;
const rssMb = () => Math.round((process.memoryUsage().rss / MB) * 10) / 10;

/** a listen and a consume round trip through a normal client: the broker still works */
async function roundTrip(b: TestBroker, tag: string): Promise<void> {
  const [reader, writer] = await Promise.all([connect(`${tag}-reader`, b.hostSpec), connect(`${tag}-writer`, b.hostSpec)]);
  const heard = new Inbox();
  const taken = new Inbox();
  await reader.listen('check/v1/1', heard.listener).ready;
  await reader.consume('check/v1/2', taken.consumer).ready;
  await writer.send('check/v1/1', { heard: tag });
  await writer.send('check/v1/2', { taken: tag });
  expect((await heard.waitFor(1))[0]!.msg).toEqual({ heard: tag });
  expect((await taken.waitFor(1))[0]!.msg).toEqual({ taken: tag });
}

/** every file the broker wrote is inside its data directory, and every key file is `<safe name>.pub` */
function checkFiles(b: TestBroker): void {
  const files = readdirSync(b.dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
  for (const file of files) expect(relative(b.config.dataDirectory, file).startsWith('..'), file).toBe(false);
  for (const entry of readdirSync(b.config.registeredClientsPath)) {
    if (entry === 'revoked') continue;
    expect(entry.endsWith('.pub') && CLIENT_NAME.test(entry.slice(0, -4)), entry).toBe(true);
  }
}

describe('fuzz', () => {
  test('thousands of random and broken frames, before and after auth: each refused with a known code or answered, the broker unharmed', async () => {
    const b = await broker();
    const keys = newKeyPair();
    // a standing watcher on every fuzzed queue, so accepted messages are delivered, not only stored
    const watcher = await connect('watcher', b.hostSpec);
    let watched = 0;
    for (const endpoint of ['fuzz', '__proto__', 'constructor', 'toString']) {
      await watcher.listen(`${endpoint}/v1/*`, () => void watched++).ready;
      await watcher.consume(`${endpoint}/v1/*`, (_err: Error | null, _msg?: unknown, done?: Done) => { watched++; done?.(); }).ready;
    }
    const tally = newTally();
    const lanes = Array.from({ length: 8 }, (_, i) => new FuzzLane(b.port, `lane-${i}`, keys, tally));
    const started = performance.now();
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(fuzzCase, { minLength: 48, maxLength: 48 }), async (cases) => {
          await Promise.all(lanes.map(async (lane, i) => {
            for (let j = i; j < cases.length; j += lanes.length) await lane.run(cases[j]!);
          }));
        }),
        {
          numRuns: 100,
          // fixed so CI is repeatable; WHISKER_FUZZ_SEED=<n> explores other cases
          seed: Number(process.env.WHISKER_FUZZ_SEED ?? 20261202),
          endOnFailure: true,
          reporter: (out) => {
            if (out.failed) throw new Error(`fuzz failed (seed ${out.seed}, path ${out.counterexamplePath}): ${String(out.errorInstance)}`);
          },
        },
      );
    } finally {
      await Promise.all(lanes.map((lane) => lane.close()));
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      console.log(`fuzz: ${tally.sent} frames over ${tally.sockets} sockets in ${seconds} s; refusals ${JSON.stringify(Object.fromEntries(tally.refusals))}, ` +
        `welcomes ${tally.welcomes}, replies ${tally.replies} (errors ${JSON.stringify(Object.fromEntries(tally.replyErrors))}), ` +
        `publish results ${tally.results} (errors ${JSON.stringify(Object.fromEntries(tally.resultErrors))}), acks ${tally.acks}, deliveries to the watcher ${watched}`);
    }
    expect(tally.sent).toBe(48 * 100);
    expect(tally.replies + tally.results).toBeGreaterThan(100); // the fuzz reached the handlers, not only the decoder
    // every raw socket is gone from the broker: only the watcher is left
    await until(() => b.sessions.size === 1, 5000, 'closed sockets to leave the broker');
    await roundTrip(b, 'after-fuzz');
    checkFiles(b);
  }, 300_000); // a fixed amount of work (4,800 frames): ~10 s on a quiet machine, 40 s and more on a loaded one, over 120 s at load 30-50

  // found by the fuzz above (a `set type` mutation); pinned so it does not depend on the seed
  test('a frame whose type is 6,000 nested arrays (12 KB) is E_PROTOCOL and closed, before and after auth', async () => {
    const b = await broker();
    const frame = `{"type":${'['.repeat(6000)}${']'.repeat(6000)}}`;
    const stranger = await RawPeer.open(b.port);
    stranger.sendRaw(frame);
    // within 2 s: the 5 s handshake timeout must not be what answers
    expect((await stranger.next('error', () => true, 2000)).error.code).toBe('E_PROTOCOL');
    await stranger.closed;
    const member = await RawPeer.open(b.port);
    await member.login('member', newKeyPair());
    member.sendRaw(frame);
    expect((await member.next('error', () => true, 2000)).error.code).toBe('E_PROTOCOL');
    await member.closed;
    await roundTrip(b, 'after-deep-type');
  });
});

describe('valid but hostile requests', () => {
  test('ids: 300 characters is E_BAD_CHANNEL; __proto__, constructor and toString are ordinary ids and names', async () => {
    const b = await broker();
    const peer = await RawPeer.open(b.port);
    await peer.login('prober', newKeyPair());
    const tooLong = await peer.request({ type: 'subscribe', sub: 1, mode: 'listen', endpoint: 'odd', version: 'v1', ids: ['x'.repeat(300)] });
    expect(tooLong.error?.code).toBe('E_BAD_CHANNEL');
    expect(b.router.queues.has('odd/v1')).toBe(false);
    const longest = await peer.request({ type: 'subscribe', sub: 2, mode: 'listen', endpoint: 'odd', version: 'v1', ids: ['y'.repeat(256)] });
    expect(longest).toEqual({ type: 'reply', req: longest.req });

    const reader = await connect('__proto__', b.hostSpec);
    const writer = await connect('constructor', b.hostSpec);
    const inbox = new Inbox();
    await reader.listen({ endpoint: 'odd', version: 'v1', ids: ['__proto__', 'constructor', 'toString'] }, inbox.listener).ready;
    await reader.listen({ endpoint: '__proto__', version: 'constructor', ids: ['hasOwnProperty'] }, inbox.listener).ready;
    for (const id of ['valueOf', '__proto__', 'constructor', 'toString', 'prototype']) await writer.send(`odd/v1/${id}`, { id });
    await writer.send('__proto__/constructor/hasOwnProperty', { id: 'hasOwnProperty' });
    await inbox.waitFor(4);
    await writer.send('odd/v1/toString', { id: 'last' });
    await inbox.waitFor(5);
    expect(inbox.items.map((r) => [r.info.channel.id, r.info.from])).toEqual([
      ['__proto__', 'constructor'], ['constructor', 'constructor'], ['toString', 'constructor'], ['hasOwnProperty', 'constructor'], ['toString', 'constructor'],
    ]);
    expect(readdirSync(b.config.registeredClientsPath)).toEqual(expect.arrayContaining(['__proto__.pub', 'constructor.pub']));
  });

  test('rules are Maps: a read grant for id __proto__ grants nothing else, a client named constructor gets no rule', async () => {
    const b = await broker({ rules: [{ client: 'reader', read: ['odd/v1/__proto__'] }, { client: 'constructor', write: ['odd/*'] }] });
    const peer = await RawPeer.open(b.port);
    await peer.login('reader', newKeyPair());
    const reply = await peer.request({ type: 'subscribe', sub: 1, mode: 'listen', endpoint: 'odd', version: 'v1', ids: ['__proto__', 'constructor', 'toString', '*'] });
    expect(reply.error).toBeUndefined();
    expect(reply.refused?.map((r) => [r.id, r.error.code])).toEqual([['constructor', 'E_FORBIDDEN'], ['toString', 'E_FORBIDDEN'], ['*', 'E_FORBIDDEN']]);
    const intruder = await RawPeer.open(b.port);
    await intruder.login('constructor', newKeyPair());
    const read = await intruder.request({ type: 'subscribe', sub: 1, mode: 'listen', endpoint: 'odd', version: 'v1', ids: ['__proto__'] });
    expect(read.refused?.map((r) => r.error.code)).toEqual(['E_FORBIDDEN']);
  });

  test('acks for messages never delivered, or delivered to another connection, settle nothing', async () => {
    const b = await broker({ requeueInterval: 1.5 });
    const [alice, mallory] = [await RawPeer.open(b.port), await RawPeer.open(b.port)];
    await alice.login('alice', newKeyPair());
    await mallory.login('mallory', newKeyPair());
    const producer = await connect('producer', b.hostSpec);
    expect((await alice.request({ type: 'subscribe', sub: 1, mode: 'consume', endpoint: 'jobs', version: 'v1', ids: ['1'] })).error).toBeUndefined();
    const { messageId } = await producer.send('jobs/v1/1', { job: 1 });
    const first = await alice.delivery(messageId);
    expect(first).toMatchObject({ sub: 1, via: '1', nbRequeues: 0 });

    // mallory: the same sub number and id as alice, a listener on the id, a consumer on another id
    await mallory.request({ type: 'subscribe', sub: 1, mode: 'consume', endpoint: 'jobs', version: 'v1', ids: ['1'] });
    await mallory.request({ type: 'subscribe', sub: 2, mode: 'listen', endpoint: 'jobs', version: 'v1', ids: ['1'] });
    await mallory.request({ type: 'subscribe', sub: 3, mode: 'consume', endpoint: 'jobs', version: 'v1', ids: ['2'] });
    const forged = [1, 2, 3, 99].flatMap((sub) => [
      { sub, messageId, via: '1', ok: true },
      { sub, messageId, via: '2', ok: true },
      { sub, messageId, via: '*', ok: false, delaySeconds: 0 },
    ]);
    mallory.sendJson({ type: 'ack', acks: forged });
    // alice acks what she was never given, and her own message through the wrong id
    alice.sendJson({ type: 'ack', acks: [{ sub: 1, messageId: 'never-delivered', via: '1', ok: true }, { sub: 1, messageId, via: '2', ok: true }] });
    // replies come after the acks were handled (one socket, in order); mallory leaves id 1 so a redelivery is alice's
    await mallory.request({ type: 'removeIds', sub: 1, ids: ['1'] });
    await alice.request({ type: 'unsubscribe', sub: 42 });
    const queue = b.router.queues.get('jobs/v1')!;
    expect(queue.counters.acked).toBe(0);
    expect(queue.inFlightCount).toBe(1);
    expect(mallory.isClosed || alice.isClosed).toBe(false);

    const again = await alice.next('deliver', (f) => f.messages.some((m) => m.messageId === messageId && m.nbRequeues === 1), 4000);
    expect(again.messages.find((m) => m.messageId === messageId)).toMatchObject({ sub: 1, via: '1', nbRequeues: 1 });
    expect(mallory.deliveries().map((d) => d.messageId)).not.toContain(messageId);
    alice.sendJson({ type: 'ack', acks: [{ sub: 1, messageId, via: '1', ok: true }] });
    await until(() => queue.counters.acked === 1);
    expect(queue.inFlightCount).toBe(0);
  });

  test('limits.maxSubscriptionsPerConnection: 3 -> the 4th id is E_LIMIT and creates nothing', async () => {
    const b = await broker({ limits: { maxSubscriptionsPerConnection: 3 } });
    const keys = newKeyPair();
    const peer = await RawPeer.open(b.port);
    await peer.login('greedy', keys);
    expect(await peer.request({ type: 'subscribe', sub: 1, mode: 'listen', endpoint: 'lim', version: 'v1', ids: ['a', 'b', 'c'] })).not.toHaveProperty('error');
    expect((await peer.request({ type: 'addIds', sub: 1, ids: ['d'] })).error?.code).toBe('E_LIMIT');
    expect((await peer.request({ type: 'subscribe', sub: 2, mode: 'consume', endpoint: 'lim2', version: 'v1', ids: ['d'] })).error?.code).toBe('E_LIMIT');
    expect(b.router.queues.has('lim2/v1')).toBe(false);
    // an id already held does not count twice; a freed one can be taken again
    expect(await peer.request({ type: 'addIds', sub: 1, ids: ['b'] })).not.toHaveProperty('error');
    expect(await peer.request({ type: 'removeIds', sub: 1, ids: ['a'] })).not.toHaveProperty('error');
    expect(await peer.request({ type: 'subscribe', sub: 2, mode: 'consume', endpoint: 'lim2', version: 'v1', ids: ['d'] })).not.toHaveProperty('error');
    const fresh = await RawPeer.open(b.port);
    await fresh.login('greedy', keys);
    expect((await fresh.request({ type: 'subscribe', sub: 1, mode: 'listen', endpoint: 'lim', version: 'v1', ids: ['1', '2', '3', '4'] })).error?.code).toBe('E_LIMIT');
    expect(peer.isClosed || fresh.isClosed).toBe(false);
  });

  test('limits.maxConnections: 5 -> the 6th socket gets E_LIMIT and is closed, the 5 keep working', async () => {
    const b = await broker({ limits: { maxConnections: 5 } });
    const keys = newKeyPair();
    const five = await Promise.all(Array.from({ length: 5 }, () => RawPeer.open(b.port)));
    for (const peer of five) await peer.login('crowd', keys);

    const sixth = new WebSocket(`ws://127.0.0.1:${b.port}`);
    const got: string[] = [];
    sixth.on('message', (data) => got.push(data.toString()));
    const code = await new Promise<number>((resolve) => sixth.on('close', resolve));
    expect(got.map((t) => JSON.parse(t) as unknown)).toEqual([{ type: 'error', error: { code: 'E_LIMIT', message: 'Too many connections (limit 5)' } }]);
    expect(code).toBe(1013);
    const refused = unconnected();
    await expect(refused.connect(clientConfig('late', b.hostSpec, { connectTimeout: 2000 }))).rejects.toMatchObject({ code: 'E_LIMIT' });
    await refused.disconnect();

    for (const [i, peer] of five.entries()) {
      expect(await peer.request({ type: 'subscribe', sub: 1, mode: 'listen', endpoint: 'busy', version: 'v1', ids: [String(i)] })).not.toHaveProperty('error');
    }
    five[0]!.sendJson({ type: 'publish', messages: [{ messageId: 'm-4', channel: 'busy/v1/4', data: { to: 4 }, created: Date.now() }] });
    expect((await five[4]!.delivery('m-4')).data).toEqual({ to: 4 });
    // a freed slot is given to the next socket
    await five[1]!.terminate();
    await until(() => b.sessions.size === 4);
    const next = await RawPeer.open(b.port);
    await next.login('crowd', keys);
  });

  test('a deeply nested body (20,000 levels, 40 KB) is refused or delivered, and never breaks the broker', async () => {
    const b = await broker();
    const reader = await connect('deep-reader', b.hostSpec);
    const inbox = new Inbox();
    await reader.listen('deep/v1/1', inbox.listener).ready;
    const peer = await RawPeer.open(b.port);
    await peer.login('deep-writer', newKeyPair());
    const depth = 20_000;
    peer.sendRaw(`{"type":"publish","messages":[{"messageId":"deep","channel":"deep/v1/1","created":1,"data":${'['.repeat(depth)}${']'.repeat(depth)}}]}`);
    const results = await peer.next('results', (f) => f.results.some((r) => r.messageId === 'deep'));
    const result = results.results.find((r) => r.messageId === 'deep')!;
    const writer = await connect('deep-writer2', b.hostSpec);
    await writer.send('deep/v1/1', { after: true });
    if (result.error) {
      console.log(`deep body refused with ${result.error.code}: ${result.error.message}`);
      // a clear refusal, not E_STORE ("store unavailable") for a message the store never saw
      expect(['E_TOO_LARGE', 'E_PROTOCOL', 'E_SCHEMA']).toContain(result.error.code);
      expect((await inbox.waitFor(1))[0]!.msg).toEqual({ after: true });
    } else {
      await inbox.waitFor(2, 3000);
      expect(inbox.items.map((r) => (Array.isArray(r.msg) ? 'deep' : r.msg))).toEqual(['deep', { after: true }]);
    }
  });

  test('a backlog of large messages reaches a listener that subscribes later (deliver frames stay within what a client accepts)', async () => {
    const b = await broker();
    const writer = await connect('big-writer', b.hostSpec);
    const body = 'x'.repeat(990_000);
    for (let i = 0; i < 112; i++) await writer.send('big/v1/1', { i, body });
    const reader = await connect('big-reader', b.hostSpec);
    const inbox = new Inbox();
    let drops = 0;
    reader.on('disconnect', () => drops++);
    const dropped = once(reader, 'disconnect').then(() => { throw new Error('the listener was disconnected while its backlog was delivered'); });
    reader.listen('big/v1/1', inbox.listener);
    await Promise.race([inbox.waitWhileArriving(112, 10_000), dropped]);
    expect(drops).toBe(0);
    expect(inbox.items.map((r) => (r.msg as { i: number }).i)).toEqual(Array.from({ length: 112 }, (_, i) => i));
  }, 180_000); // ~11 s on a quiet machine, over 30 s at load 15, 63 s at load 34 (112 MB through one process)
});

describe('load', () => {
  test('500 connections opened at once all reach ready, and a send from each arrives', async () => {
    // 500 legitimate clients from one address at once, default limits: the per-address share
    // bites only once the strangers' total is full (docs/security.md#limits, issue 27 item 10)
    const b = await broker();
    const collector = await connect('collector', b.hostSpec);
    const inbox = new Inbox();
    await collector.consume('crowd/v1/*', { prefetch: 100 }, inbox.consumer).ready;
    const rssBefore = rssMb();
    const heapBefore = process.memoryUsage().heapUsed;
    const started = performance.now();
    // 10 names x 50 processes: one key pair per name (SPEC §1: several processes may share a name)
    // 500 handshakes (a signed token each) in one process: 20 s was not enough at load 34
    const clients = await Promise.all(Array.from({ length: 500 }, (_, i) => connect(`crowd-${i % 10}`, b.hostSpec, { connectTimeout: 60_000 })));
    const readyMs = Math.round(performance.now() - started);
    expect(clients.every((c) => c.isConnected())).toBe(true);
    expect(b.sessions.size).toBe(501);
    await Promise.all(clients.map((c, i) => c.send(`crowd/v1/${i}`, { i })));
    await inbox.waitWhileArriving(500, 10_000);
    const totalMs = Math.round(performance.now() - started);
    console.log(`500 connections: all ready in ${readyMs} ms, 500 sends delivered after ${totalMs} ms; RSS ${rssBefore} MB -> ${rssMb()} MB, ` +
      `heap +${Math.round((process.memoryUsage().heapUsed - heapBefore) / MB)} MB (broker and all 501 clients share this process)`);
    expect(new Set(inbox.items.map((r) => (r.msg as { i: number }).i)).size).toBe(500);
    expect(new Set(inbox.items.map((r) => r.info.from))).toEqual(new Set(Array.from({ length: 10 }, (_, i) => `crowd-${i}`)));
  }, 120_000);

  test('a listener that stops reading while 20,000 messages of 1 KB arrive: deliveries pause, memory stays bounded, and resume', async () => {
    const MESSAGES = 20_000;
    // a reader that reads nothing for longer than heartbeatTimeout is closed as dead: not this one
    const b = await broker({ maxItemsInQueue: 30_000, heartbeatTimeout: 120, limits: { maxBufferedBytesPerConnection: 64 * 1024 } });
    const reader = await SlowReader.open(b.port, 'slowpoke', newKeyPair(), 'slow', 'v1');
    reader.pause();
    const producer = await connect('firehose', b.hostSpec);
    const body = 'x'.repeat(1000);
    (globalThis as { gc?: () => void }).gc?.();
    const rssBefore = process.memoryUsage().rss;
    const started = performance.now();
    for (let chunk = 0; chunk < MESSAGES; chunk += 2000) {
      await Promise.all(Array.from({ length: 2000 }, (_, i) => producer.send(`slow/v1/${i % 10}`, { i: chunk + i, body })));
    }
    const sentMs = Math.round(performance.now() - started);
    const queue = b.router.queues.get('slow/v1')!;
    // the kernel's socket buffers absorb some more; then deliveries must stop for good
    let inFlight = -1;
    for (let steady = 0; steady < 3; ) {
      steady = queue.inFlightCount === inFlight ? steady + 1 : 0;
      inFlight = queue.inFlightCount;
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    const growthMb = Math.round(((process.memoryUsage().rss - rssBefore) / MB) * 10) / 10;
    console.log(`slow consumer: ${MESSAGES} x 1 KB sent in ${sentMs} ms; paused reader got ${reader.received}; broker stopped at ${queue.inFlightCount} in flight ` +
      `(~${Math.round((queue.inFlightCount * 1.1) / 1024)} MB, mostly kernel socket buffers), ${queue.depth} waiting; RSS growth ${growthMb} MB (bound 150 MB)`);
    expect(queue.inFlightCount).toBe(inFlight);
    expect(queue.inFlightCount).toBeLessThan(MESSAGES / 2);
    expect(queue.depth).toBe(MESSAGES - queue.inFlightCount);
    expect(growthMb).toBeLessThan(150);

    const resumed = performance.now();
    reader.resume();
    await until(() => reader.received === MESSAGES, 15_000, 'every message after resume');
    console.log(`slow consumer: resumed, the remaining ${MESSAGES - inFlight} delivered in ${Math.round(performance.now() - resumed)} ms`);
    expect(queue.depth).toBe(0);
  }, 40_000);

  test('a paused listener that subscribes to a backlog of 1,000 x 100 KB is sent no more than its buffer bound', async () => {
    const MESSAGES = 1000;
    const b = await broker({ maxItemsInQueue: 2000, heartbeatTimeout: 120, limits: { maxBufferedBytesPerConnection: 64 * 1024 } });
    const producer = await connect('backlog-writer', b.hostSpec);
    const body = 'x'.repeat(100_000);
    for (let chunk = 0; chunk < MESSAGES; chunk += 100) {
      await Promise.all(Array.from({ length: 100 }, (_, i) => producer.send(`burst/v1/${i % 10}`, { i: chunk + i, body })));
    }
    const rssBefore = rssMb();
    const reader = await SlowReader.open(b.port, 'burst-reader', newKeyPair(), 'burst', 'v1', true);
    const queue = b.router.queues.get('burst/v1')!;
    await new Promise((resolve) => setTimeout(resolve, 300)); // what the broker pushes at a reader that reads nothing
    console.log(`backlog burst: ${MESSAGES} x 100 KB waiting, a paused reader subscribed: ${queue.inFlightCount} sent to it (~${Math.round(queue.inFlightCount / 10)} MB), ` +
      `${queue.depth} held back; RSS ${rssBefore} MB -> ${rssMb()} MB`);
    // 64 KB of broker buffer plus what the loopback socket buffers hold (a few MB) is far below 20 MB
    expect(queue.inFlightCount).toBeLessThan(200);
    reader.resume();
    await until(() => reader.received === MESSAGES, 15_000, 'the whole backlog after resume');
  }, 40_000);
});
