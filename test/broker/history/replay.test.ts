import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import type { Delivery, ReplayEndFrame } from '../../../src/protocol/frames.js';
import { startBroker } from '../../../src/server/start.js';
import { broker, brokerConfig, connect, freePort, type TestBroker, until } from '../../support/harness.js';
import { newKeyPair, RawPeer } from '../../support/raw-peer.js';

/**
 * Retained channels and replays on the wire (issue 19, docs/protocol.md#replay): real brokers on
 * port 0, real files; a raw peer asks for the replay and counts what comes back.
 */
const retained = (retention: Record<string, number> = { seconds: 3600 }) => ({
  defaultPolicy: 'allow',
  channels: { 'ev/v1': { retention }, 'plain/v1': {} },
});

async function sendAll(b: TestBroker, channel: (n: number) => `${string}/${string}/${string}`, count: number, from = 'producer') {
  const producer = await connect(from, b.hostSpec);
  for (let i = 0; i < count; i += 500) {
    await Promise.all(Array.from({ length: Math.min(500, count - i) }, (_, k) => producer.send(channel(i + k), { n: i + k })));
  }
  await producer.disconnect();
}

/** one key pair per client name: the first login registers it */
const keys = new Map<string, ReturnType<typeof newKeyPair>>();
const keyOf = (name: string) => keys.get(name) ?? keys.set(name, newKeyPair()).get(name)!;

async function replay(b: TestBroker, frame: Record<string, unknown>, name = 'reader'): Promise<{ got: Delivery[]; end: ReplayEndFrame; peer: RawPeer }> {
  const peer = await RawPeer.open(b.port);
  await peer.login(name, keyOf(name));
  const reply = await peer.request({ type: 'replay', sub: 7, endpoint: 'ev', version: 'v1', ids: ['*'], ...frame });
  if (reply.error) throw Object.assign(new Error(reply.error.message), { code: reply.error.code, reply });
  const end = await peer.next('replayEnd', (f) => f.sub === 7, 20_000);
  return { got: peer.deliveries().filter((d) => d.sub === 7), end, peer };
}

describe('replay', () => {
  let b: TestBroker;
  afterEach(async () => {
    keys.clear();
    await b?.stop();
  });

  test('messages of a retained channel stay after their acks and replay in acceptance order per id, then end with the count', async () => {
    b = await broker(retained());
    await sendAll(b, (n) => `ev/v1/${n % 3}`, 30);
    const worker = await connect('worker', b.hostSpec);
    let acked = 0;
    await worker.consume('ev/v1/*', { prefetch: 50 }, (_err, _msg, done) => {
      acked++;
      done!();
    }).ready;
    await expect.poll(() => acked).toBe(30);
    await expect.poll(() => b.router.queues.get('ev/v1')!.size).toBe(0);
    const { got, end } = await replay(b, {});
    expect(end.count).toBe(30);
    expect(got.map((d) => (d.data as { n: number }).n)).toEqual(Array.from({ length: 30 }, (_, n) => n));
    expect(got.every((d) => d.nbRequeues === 0 && d.via === '*' && d.from === 'producer')).toBe(true);
    // one id, and a limit
    const one = await replay(b, { ids: ['1'], limit: 4 });
    expect(one.got.map((d) => d.channel)).toEqual(['ev/v1/1', 'ev/v1/1', 'ev/v1/1', 'ev/v1/1']);
    expect(one.got.map((d) => (d.data as { n: number }).n)).toEqual([1, 4, 7, 10]);
    expect(one.end.count).toBe(4);
    await worker.disconnect();
  });

  test('since a time, after a message id, until a time', async () => {
    b = await broker(retained());
    await sendAll(b, () => 'ev/v1/a', 10);
    const mark = Date.now() + 1;
    await new Promise((resolve) => setTimeout(resolve, 5)); // acceptance times must differ from the mark
    await sendAll(b, (n) => `ev/v1/b${n}`, 5);
    const since = await replay(b, { since: mark });
    expect(since.got.map((d) => d.channel)).toEqual(['ev/v1/b0', 'ev/v1/b1', 'ev/v1/b2', 'ev/v1/b3', 'ev/v1/b4']);
    const all = await replay(b, {});
    const afterId = await replay(b, { sinceId: all.got[11]!.messageId });
    expect(afterId.got.map((d) => d.messageId)).toEqual(all.got.slice(12).map((d) => d.messageId));
    const until = await replay(b, { until: mark - 1 });
    expect(until.end.count).toBe(10);
  });

  test('refused: a channel with no retention (E_NO_HISTORY), an id the rules do not let the client read (E_FORBIDDEN), a reserved id held by another client', async () => {
    b = await broker({ ...retained(), defaultPolicy: 'deny', rules: [{ client: 'producer', write: ['ev/*', 'plain/*'] }, { client: 'reader', read: ['ev/*', 'plain/*'] }, { client: 'nobody', write: ['plain/*'] }, { client: 'owner', read: ['!ev/v1/*'] }, { client: 'other', read: ['ev/*'] }] });
    await sendAll(b, () => 'ev/v1/mine', 3);
    await expect(replay(b, { endpoint: 'plain' })).rejects.toMatchObject({ code: 'E_NO_HISTORY' });
    const stranger = await RawPeer.open(b.port);
    await stranger.login('nobody', keyOf('nobody'));
    const refused = await stranger.request({ type: 'replay', sub: 7, endpoint: 'ev', version: 'v1', ids: ['mine'] });
    expect(refused.refused?.map((r) => r.error.code)).toEqual(['E_FORBIDDEN']);
    expect((await stranger.next('replayEnd')).count).toBe(0);
    // `owner` reserves `mine` by listening on it: `other` may not replay it, `owner` may
    const owner = await RawPeer.open(b.port);
    await owner.login('owner', keyOf('owner'));
    expect((await owner.request({ type: 'subscribe', sub: 1, mode: 'listen', endpoint: 'ev', version: 'v1', ids: ['mine'] })).refused).toBeUndefined();
    const other = await RawPeer.open(b.port);
    await other.login('other', keyOf('other'));
    const held = await other.request({ type: 'replay', sub: 7, endpoint: 'ev', version: 'v1', ids: ['mine'] });
    expect(held.refused?.map((r) => r.error.code)).toEqual(['E_FORBIDDEN']);
    expect((await other.next('replayEnd')).count).toBe(0);
    expect((await owner.request({ type: 'replay', sub: 7, endpoint: 'ev', version: 'v1', ids: ['mine'] })).refused).toBeUndefined();
    expect((await owner.next('replayEnd')).count).toBe(3);
  });

  test('the history survives a restart, and is trimmed by size oldest first', async () => {
    b = await broker(retained({ maxBytes: 65_536 }));
    const body = 'x'.repeat(900);
    const producer = await connect('producer', b.hostSpec);
    for (let i = 0; i < 300; i++) await producer.send('ev/v1/1', { n: i, body });
    await producer.disconnect();
    const { got } = await replay(b, {});
    // 300 records of ~1 KB, 64 KiB kept: the oldest segments went, the newest messages stay
    expect(got.length).toBeLessThan(300);
    expect(got.length).toBeGreaterThan(40);
    expect((got.at(-1)!.data as { n: number }).n).toBe(299);
    const ns = got.map((d) => (d.data as { n: number }).n);
    expect(ns).toEqual(Array.from({ length: ns.length }, (_, k) => 300 - ns.length + k));
    const dir = join(b.config.dataDirectory, 'history', 'ev@v1');
    const files = readdirSync(dir);
    expect(files.length).toBeGreaterThan(1);
    expect(files.reduce((n, f) => n + statSync(join(dir, f)).size, 0)).toBeLessThanOrEqual(65_536);
    // the same history after a restart on the same data directory
    await b.stop();
    const again = await startBroker(brokerConfig(retained({ maxBytes: 65_536 }), b.dir));
    b = Object.assign(again, { dir: b.dir, hostSpec: `127.0.0.1:${again.port}@${again.config.serviceId}` }) as TestBroker;
    const after = await replay(b, {});
    expect(after.got.map((d) => d.messageId)).toEqual(got.map((d) => d.messageId));
  });

  test('a replay of 5,000 messages through a small connection buffer (64 KiB) delivers each once, paced by the writes', async () => {
    b = await broker({ ...retained(), limits: { maxBufferedBytesPerConnection: 65_536 } });
    await sendAll(b, (n) => `ev/v1/${n % 10}`, 5_000);
    const { end, got } = await replay(b, {});
    expect(end.count).toBe(5_000);
    expect(new Set(got.map((d) => d.messageId)).size).toBe(5_000);
  });
});

describe('retention by time', () => {
  test('messages older than retention.seconds are not replayed, and their segments are dropped', async () => {
    let clock = Date.now();
    const b = await broker(retained({ seconds: 60 }), { now: () => clock });
    try {
      await sendAll(b, () => 'ev/v1/old', 10);
      clock += 61_000;
      await sendAll(b, () => 'ev/v1/new', 5);
      const { got } = await replay(b, {});
      expect(got.map((d) => d.channel)).toEqual(Array.from({ length: 5 }, () => 'ev/v1/new'));
      const dir = join(b.config.dataDirectory, 'history', 'ev@v1');
      expect(readdirSync(dir)).toHaveLength(1); // the old segment went with the append that came after it
    } finally {
      keys.clear();
      await b.stop();
    }
  });
});

describe('mirrors', () => {
  test('a slave keeps the same history as its master: a promoted slave replays what the master would have', async () => {
    const [pa, pb] = await Promise.all([freePort(), freePort()]);
    const spec = (id: string, port: number) => `127.0.0.1:${port}@${id}`;
    const base = { ...retained(), logLevel: 'silent' };
    const a = await startBroker(brokerConfig({ ...base, serviceId: 'a', isMaster: true, peers: [spec('b', pb!)], socketServer: { host: '127.0.0.1', port: pa } }));
    const sb = await startBroker(brokerConfig({ ...base, serviceId: 'b', isMaster: false, peers: [spec('a', pa!)], socketServer: { host: '127.0.0.1', port: pb } }));
    try {
      await until(() => [a, sb].every((x) => x.peers.status().every((p) => p.connected && p.role !== 'unknown')), 5000, 'peer links');
      const producer = await connect('producer', [spec('a', pa!), spec('b', pb!)]);
      for (let i = 0; i < 50; i++) await producer.send(`ev/v1/${i % 2}`, { n: i });
      const worker = await connect('worker', [spec('a', pa!), spec('b', pb!)]);
      let acked = 0;
      await worker.consume('ev/v1/*', { prefetch: 20 }, (_e, _m, done) => {
        acked++;
        done!();
      }).ready;
      await until(() => acked === 50 && sb.router.queues.get('ev/v1')?.size === 0, 5000, 'acked on both');
      const asTest = (x: typeof a) => Object.assign(x, { dir: '', hostSpec: '' }) as TestBroker;
      const fromMaster = await replay(asTest(a), {});
      const fromSlave = await replay(asTest(sb), {});
      expect(fromSlave.end.count).toBe(50);
      expect(fromSlave.got.map((d) => d.messageId)).toEqual(fromMaster.got.map((d) => d.messageId));
      await Promise.all([producer.disconnect(), worker.disconnect()]);
    } finally {
      keys.clear();
      await Promise.all([a.stop(), sb.stop()]);
    }
  });
});
