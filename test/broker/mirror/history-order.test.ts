import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import type { WhiskerClient } from '../../../src/client/client.js';
import { startProcess } from '../../support/broker-process.js';
import { connect, freePort } from '../../support/harness.js';
import { configureMirror, type MirrorNode, mirrorNodes } from '../../support/mirror-nodes.js';
import { parseMetrics, valueOf } from '../../support/prom.js';
import { slowIoEnv } from '../../support/slow-io.js';

/**
 * A slave in step writes its history in its master's order (issue 27, SPEC §7: one connection's
 * sends are retained in the order sent, on every mirror). Clients send every message to every
 * broker: a slave gets a client's own copies directly and the master's feed of the same messages.
 * Messages a client sent while its link to the slave was down reach the slave through the feed
 * only; when the feed is late, newer copies the client sends the slave after reconnecting were
 * written first, and a promoted slave replayed them in that order.
 */

const CHANNEL = 'ev/v1/1';
const retention = { seconds: 3600 };

/**
 * A TCP proxy to 127.0.0.1:`port`: `pause` holds both directions (dropped packets), `drop` closes
 * every connection and refuses new ones; `holdFromServer` holds what the server sends once
 * `after` went through (its reader's frames are held back, what it writes still flows), and
 * `seen` resolves when the server sent `text`
 */
class Link {
  readonly #sockets = new Set<Socket>();
  /** the sockets to the server: what they read goes to the client */
  readonly #fromServer = new Set<Socket>();
  #server: Server | null = null;
  #paused = false;
  #refusing = false;
  #holdAfter: string | null = null;
  #holding = false;
  #watchers: Array<{ text: string; resolve: () => void }> = [];
  /** when the server last sent something through */
  #lastFromServer = 0;
  port = 0;

  async open(port: number): Promise<this> {
    this.#server = createServer((inbound) => {
      if (this.#refusing) return void inbound.destroy();
      const outbound = tcpConnect(port, '127.0.0.1');
      this.#fromServer.add(outbound);
      let tail = '';
      for (const [a, b] of [[inbound, outbound], [outbound, inbound]] as const) {
        this.#sockets.add(a);
        a.on('data', (chunk: Buffer) => {
          if (!b.write(chunk)) a.pause();
          if (a !== outbound) return;
          this.#lastFromServer = Date.now();
          const text = tail + chunk.toString('latin1');
          tail = text.slice(-64);
          this.#watchers = this.#watchers.filter((w) => !text.includes(w.text) || void w.resolve());
          if (this.#holdAfter !== null && text.includes(this.#holdAfter)) {
            this.#holdAfter = null;
            this.#holding = true;
            outbound.pause();
          }
        });
        b.on('drain', () => {
          if (!this.#paused && !(a === outbound && this.#holding)) a.resume();
        });
        a.on('error', () => b.destroy());
        a.on('close', () => {
          this.#sockets.delete(a);
          this.#fromServer.delete(a);
          b.destroy();
        });
        if (this.#paused) a.pause();
      }
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.#server.address() as { port: number }).port;
    return this;
  }

  pause(paused: boolean): void {
    this.#paused = paused;
    for (const socket of this.#sockets) {
      if (paused) socket.pause();
      else socket.resume();
    }
  }

  drop(refusing: boolean): void {
    this.#refusing = refusing;
    if (refusing) for (const socket of this.#sockets) socket.destroy();
  }

  /** what the server sends after `after` (on a connection opened later too) waits; null lets it flow again */
  holdFromServer(after: string | null): void {
    this.#holdAfter = after;
    if (after !== null) return;
    this.#holding = false;
    for (const socket of this.#fromServer) socket.resume();
  }

  /** resolves once the server sent `text` to the client */
  seen(text: string): Promise<void> {
    return new Promise((resolve) => this.#watchers.push({ text, resolve }));
  }

  /** resolves once the server sent nothing through for `ms` (what it sent is in the client's socket) */
  async quietFromServer(ms: number): Promise<void> {
    while (Date.now() - this.#lastFromServer < ms) await new Promise((resolve) => setTimeout(resolve, 50));
  }

  close(): void {
    for (const socket of this.#sockets) socket.destroy();
    this.#server?.close();
  }
}

const links: Link[] = [];
afterEach(() => {
  for (const link of links.splice(0)) link.close();
});

async function link(port: number): Promise<Link> {
  const made = await new Link().open(port);
  links.push(made);
  return made;
}

/** `{ p, k }` sends of producer `p` from `from`, pipelined in batches; pushes each answered OK */
async function sendRange(producer: WhiskerClient, p: number, from: number, count: number, answered: Array<[number, number]>): Promise<void> {
  for (let k = from; k < from + count; k += 100) {
    const batch = Array.from({ length: Math.min(100, from + count - k) }, (_, i) => k + i);
    const outcomes = await Promise.allSettled(batch.map((n) => producer.send(CHANNEL, { p, k: n })));
    outcomes.forEach((o, i) => o.status === 'fulfilled' && answered.push([p, batch[i]!]));
  }
}

/**
 * each producer pipelines 20 sends every 50 ms (about 400 a second each, as in the nemesis), not
 * waiting for the answers; `stop()` ends it and waits for every answer
 */
function pipelining(producers: readonly WhiskerClient[], answered: Array<[number, number]>): { stop(): Promise<void> } {
  let sending = true;
  const traffic = Promise.all(producers.map(async (producer, p) => {
    const batches: Array<Promise<void>> = [];
    for (let k = 0; sending; k += 20) {
      batches.push(sendRange(producer, p, k, 20, answered));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await Promise.all(batches);
  }));
  return {
    stop: async () => {
      sending = false;
      await traffic;
    },
  };
}

async function replayPairs(node: MirrorNode): Promise<string[]> {
  const got: string[] = [];
  const reader = await connect(`reader-${node.serviceId}-${Date.now()}`, node.spec);
  try {
    await reader.replay(CHANNEL, { since: 0 }, (err, msg) => {
      if (err) throw err;
      const { p, k } = msg as { p: number; k: number };
      got.push(`${p}:${k}`);
    }).done;
  } finally {
    await reader.disconnect();
  }
  return got;
}

/** records out of their producer's send order: `p:k` after a `p:k'` with k' > k */
function orderBreaks(replayed: readonly string[]): string[] {
  const last = new Map<string, number>();
  const breaks: string[] = [];
  for (const key of replayed) {
    const [p, k] = key.split(':') as [string, string];
    const before = last.get(p);
    if (before !== undefined && Number(k) < before) breaks.push(`${key} after ${p}:${before}`);
    else last.set(p, Number(k));
  }
  return breaks;
}

/** master a and slave b in step, b following a through `feed`, a proxy that can hold the master's feed back; `extra` adds config keys per node */
async function feedPair(name: string, extra: (serviceId: string) => Record<string, unknown> = () => ({})) {
  const [a, b] = (await mirrorNodes(name, ['a', 'b'])) as [MirrorNode, MirrorNode];
  const feed = await link(a.port);
  const aViaFeed = { ...a, spec: `127.0.0.1:${feed.port}@a` };
  a.process = await startProcess(configureMirror(a, [a, b], true, { channels: { 'ev/v1': { retention } }, ...extra('a') }));
  const configureB = (isMaster: boolean) => configureMirror(b, [aViaFeed, b], isMaster, { channels: { 'ev/v1': { retention } }, ...extra('b') });
  b.process = await startProcess(configureB(false));
  await b.process.waitFor(/in step with the master/, 0, 30_000);
  type Running = MirrorNode & { process: NonNullable<MirrorNode['process']> };
  return { a: a as Running, b: b as Running, feed, configureB };
}

/** the master killed -9, the slave promoted by a reload of its config: what the promoted slave replays at once */
async function promote(a: MirrorNode, b: MirrorNode, configureB: (isMaster: boolean) => unknown): Promise<string[]> {
  a.process!.child.kill('SIGKILL');
  await a.process!.exited;
  const from = b.process!.output().length;
  configureB(true); // the file watch reloads it
  await b.process!.waitFor(/delivering: this broker acts as master/, from);
  // at once: a replay waits for the records the promoted slave is still writing
  return replayPairs(b);
}

/** every answered send replayed once, in each producer's send order (and so did the master, when given); the figures printed */
function expectWhole(label: string, answered: ReadonlyArray<readonly [number, number]>, fromPromoted: readonly string[], fromMaster?: readonly string[]): void {
  const keys = answered.map(([p, k]) => `${p}:${k}`);
  const seen = new Set(fromPromoted);
  const missing = keys.filter((key) => !seen.has(key));
  const breaks = orderBreaks(fromPromoted);
  const master = fromMaster ? `, master replayed ${fromMaster.length} (${orderBreaks(fromMaster).length} out of order)` : '';
  console.log(`${label}: ${keys.length} answered OK${master}, promoted slave ${fromPromoted.length}: ${missing.length} missing, ${fromPromoted.length - seen.size} twice, ${breaks.length} out of send order (${breaks.slice(0, 3).join(', ')})`);
  expect(missing.length, `missing e.g. ${missing.slice(0, 5).join(', ')}`).toBe(0);
  expect(fromPromoted.length - seen.size).toBe(0);
  expect(breaks).toEqual([]);
  if (fromMaster) expect(orderBreaks(fromMaster)).toEqual([]);
}

describe('a slave in step keeps its history in its master order (real broker processes)', () => {
  test("a client's link to the slave cut while the feed is late: the promoted slave replays every answered send once, in send order, as its master did", async () => {
    const { a, b, feed, configureB } = await feedPair('history-order');

    // the producers reach b through `direct`, a link that can be cut and restored
    const direct = await link(b.port);
    const hosts = [a.spec, `127.0.0.1:${direct.port}@b`];
    const producers = [await connect('order-p0', hosts, { sendTimeout: 20_000 }), await connect('order-p1', hosts, { sendTimeout: 20_000 })];
    const answered: Array<[number, number]> = [];
    const both = (from: number, count: number) => Promise.all(producers.map((producer, p) => sendRange(producer, p, from, count, answered)));

    await both(0, 1_000);
    for (let round = 0; round < 2; round++) {
      const base = 1_000 + round * 2_000;
      // the producers' link to b goes, and the master's feed to b is held back (no longer than
      // a heartbeat: b stays in step)
      direct.drop(true);
      feed.pause(true);
      // answered by a alone: b gets these from the feed only, once it flows again
      await both(base, 500);
      const reconnected = Promise.all(producers.map((producer) => new Promise<void>((resolve) => {
        const onReconnect = (serviceId?: string) => {
          if (serviceId !== 'b') return;
          producer.off('reconnect', onReconnect);
          resolve();
        };
        producer.on('reconnect', onReconnect);
      })));
      direct.drop(false);
      await reconnected;
      // sent to both: b takes these directly before the feed brings the older ones
      await both(base + 500, 500);
      feed.pause(false);
      await both(base + 1_000, 1_000);
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // the last feed frames reach b
    const fromMaster = await replayPairs(a);
    const fromPromoted = await promote(a, b, configureB);
    await Promise.all(producers.map((producer) => producer.disconnect()));
    expectWhole('history order', answered, fromPromoted, fromMaster);
    const sameAsMaster = fromPromoted.length === fromMaster.length && fromPromoted.every((key, i) => key === fromMaster[i]);
    expect(sameAsMaster).toBe(true);
  }, 180_000);
  test('clients\' copies held for the feed when a broker dies: the master killed -9 with the feed held back, or the slave killed -9 and restarted; the promoted slave still replays every answered send once, in send order', async () => {
    for (const dies of ['master', 'slave'] as const) {
      const { a, b, feed, configureB } = await feedPair(`history-held-${dies}`);
      const hosts = [a.spec, b.spec];
      // p2 sends to the master only: b gets its messages from the feed alone
      const producers = [await connect(`held-${dies}-p0`, hosts, { sendTimeout: 20_000 }), await connect(`held-${dies}-p1`, hosts, { sendTimeout: 20_000 }), await connect(`held-${dies}-p2`, a.spec, { sendTimeout: 20_000 })];
      const answered: Array<[number, number]> = [];
      const both = (from: number, count: number, which = [0, 1, 2]) => Promise.all(which.map((p) => sendRange(producers[p]!, p, from, count, answered)));
      await both(0, 1_000);
      // b takes these from the clients; the feed that would place them is held back (a master
      // killed now never hands b what p2 sends meanwhile: p2 waits then)
      feed.pause(true);
      await both(1_000, 1_000, dies === 'master' ? [0, 1] : [0, 1, 2]);
      expect(answered.length).toBe(dies === 'master' ? 5_000 : 6_000);
      await new Promise((resolve) => setTimeout(resolve, 300)); // b has stored its copies
      let fromMaster: string[] | null = null;
      if (dies === 'master') {
        fromMaster = await replayPairs(a);
        a.process.child.kill('SIGKILL');
        await a.process.exited;
        feed.pause(false);
      } else {
        b.process.child.kill('SIGKILL');
        await b.process.exited;
        feed.pause(false);
        await both(2_000, 1_000);
        b.process = await startProcess(configureB(false));
        await b.process.waitFor(/in step with the master/, 0, 30_000);
        await both(3_000, 1_000);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        fromMaster = await replayPairs(a);
      }
      const fromPromoted = await promote(a, b, configureB); // a killed -9 here unless killed above
      await Promise.all(producers.map((producer) => producer.disconnect()));
      expectWhole(`held copies, ${dies} killed -9`, answered, fromPromoted);
      if (dies === 'slave') expect(fromPromoted).toEqual(fromMaster);
      for (const made of links.splice(0)) made.close();
    }
  }, 240_000);
  test('held copies past 16 MiB (the feed held back while a client sends 24 MiB): the oldest are written where they arrived, with a warn line; the promoted slave replays every answered send once', async () => {
    const [a, b] = (await mirrorNodes('history-held-bound', ['a', 'b'])) as [MirrorNode, MirrorNode];
    const feed = await link(a.port);
    const aViaFeed = { ...a, spec: `127.0.0.1:${feed.port}@a` };
    const extra = { channels: { 'ev/v1': { retention } }, heartbeatTimeout: 30 };
    a.process = await startProcess(configureMirror(a, [a, b], true, extra));
    const configureB = (isMaster: boolean) => configureMirror(b, [aViaFeed, b], isMaster, extra);
    b.process = await startProcess(configureB(false));
    await b.process.waitFor(/in step with the master/, 0, 30_000);
    const producer = await connect('held-bound', [a.spec, b.spec], { sendTimeout: 30_000 });
    const body = 'x'.repeat(120_000);
    const answered: number[] = [];
    const send = async (from: number, count: number) => {
      for (let k = from; k < from + count; k += 20) {
        const batch = Array.from({ length: Math.min(20, from + count - k) }, (_, i) => k + i);
        const outcomes = await Promise.allSettled(batch.map((n) => producer.send(CHANNEL, { p: 0, k: n, body })));
        outcomes.forEach((o, i) => o.status === 'fulfilled' && answered.push(batch[i]!));
      }
    };
    await send(0, 20);
    const from = b.process.output().length;
    feed.pause(true);
    await send(20, 200); // 24 MiB of bodies: b holds its copies for a feed that does not come
    await b.process.waitFor(/written where they arrived/, from, 20_000);
    feed.pause(false);
    await send(220, 20);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const fromPromoted = await promote(a, b, configureB);
    await producer.disconnect();
    const seen = new Set(fromPromoted);
    const missing = answered.filter((k) => !seen.has(`0:${k}`));
    const released = b.process.output().slice(from).split('\n').filter((l) => /written where they arrived/.test(l));
    console.log(`held past the bound: ${answered.length} answered OK (120 KB each), promoted slave ${fromPromoted.length}: ${missing.length} missing, ${fromPromoted.length - seen.size} twice, ${orderBreaks(fromPromoted).length} out of send order; ${released.map((l) => (JSON.parse(l) as { records: number }).records).join(', ')} records written where they arrived`);
    expect(missing.length).toBe(0);
    expect(fromPromoted.length - seen.size).toBe(0);
  }, 120_000);

  test('the slave killed -9 and restarted 3 s later while producers keep pipelining to both (nemesis seed 27): the promoted slave replays every answered send once, in send order', async () => {
    const [a, b] = (await mirrorNodes('history-restart', ['a', 'b'])) as [MirrorNode, MirrorNode];
    a.process = await startProcess(configureMirror(a, [a, b], true, { channels: { 'ev/v1': { retention } } }));
    const configureB = (isMaster: boolean) => configureMirror(b, [a, b], isMaster, { channels: { 'ev/v1': { retention } } });
    b.process = await startProcess(configureB(false));
    await b.process.waitFor(/in step with the master/, 0, 30_000);
    const producers = [await connect('restart-p0', [a.spec, b.spec], { sendTimeout: 20_000 }), await connect('restart-p1', [a.spec, b.spec], { sendTimeout: 20_000 })];
    const answered: Array<[number, number]> = [];
    const traffic = pipelining(producers, answered);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    b.process.child.kill('SIGKILL');
    await b.process.exited;
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    b.process = await startProcess(configureB(false));
    await b.process.waitFor(/in step with the master/, 0, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await traffic.stop();
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // the last feed frames reach b
    const fromMaster = await replayPairs(a);
    const fromPromoted = await promote(a, b, configureB);
    await Promise.all(producers.map((producer) => producer.disconnect()));
    expectWhole('slave restarted under traffic', answered, fromPromoted, fromMaster);
  }, 120_000);

  test('the slave stops following while it still applies its sync (its link cut, as when its master is fenced: nemesis seed 27), then syncs again: the promoted slave replays every answered send once, in send order', async () => {
    // b reads all the master sends (no backpressure), held frames do not cut the link
    const { a, b, feed, configureB } = await feedPair('history-resync', () => ({ heartbeatTimeout: 30, limits: { maxMirrorBacklogBytes: 512 * 1_048_576, maxMirrorLinkBytes: 1024 * 1_048_576 } }));
    const producers = [await connect('resync-p0', [a.spec, b.spec], { sendTimeout: 30_000 }), await connect('resync-p1', [a.spec, b.spec], { sendTimeout: 30_000 })];
    const answered: Array<[number, number]> = [];
    const traffic = pipelining(producers, answered);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // b out of step: its link to the master cut, the producers still send to both
    feed.drop(true);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    // b follows again; the master's sync (its catch-up, then the feed of what it accepts
    // meanwhile) waits 2.5 s, then reaches b at once: b applies it for a while
    feed.holdFromServer('"type":"peerState"');
    const done = feed.seen('"done":true');
    feed.drop(false);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    feed.holdFromServer(null);
    await done;
    // the sync's `done` and some of the feed after it reached b, which still applies the sync:
    // b stops following (as when its master is fenced), then follows again for a new sync
    await new Promise((resolve) => setTimeout(resolve, 30));
    const from = b.process.output().length;
    feed.drop(true);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    feed.drop(false);
    await b.process.waitFor(/"in step with the master"/, from, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await traffic.stop();
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // the last feed frames reach b
    const fromMaster = await replayPairs(a);
    const fromPromoted = await promote(a, b, configureB);
    await Promise.all(producers.map((producer) => producer.disconnect()));
    expectWhole('the slave stopped following during its sync', answered, fromPromoted, fromMaster);
  }, 60_000);

  test('the master killed -9 while the slave still applies feed frames it received (a long apply chain): a replay asked at once on the promoted slave holds every answered send', async () => {
    const MiB = 1_048_576;
    const managementB = await freePort();
    // b reads all the master sends (no backpressure), the held feed does not cut the link
    const { a, b, feed, configureB } = await feedPair('history-applying', (serviceId) => ({
      heartbeatTimeout: 60,
      limits: { maxMirrorBacklogBytes: 512 * MiB, maxMirrorLinkBytes: 1024 * MiB },
      ...(serviceId === 'b' ? { management: { port: managementB } } : {}),
    }));
    // a producer on the master only: b gets its messages from the feed alone
    const producer = await connect('applying-p', a.spec, { sendTimeout: 30_000 });
    const body = 'x'.repeat(8_000);
    const answered: Array<[number, number]> = [];
    const send = async (from: number, count: number) => {
      for (let k = from; k < from + count; k += 100) {
        const batch = Array.from({ length: Math.min(100, from + count - k) }, (_, i) => k + i);
        const outcomes = await Promise.allSettled(batch.map((n) => producer.send(CHANNEL, { p: 0, k: n, body })));
        outcomes.forEach((o, i) => o.status === 'fulfilled' && answered.push([0, batch[i]!]));
      }
    };
    await send(0, 100);
    // the feed held back while the master answers 6,000 sends (48 MB): then it reaches b at once
    feed.pause(true);
    await send(100, 6_000);
    feed.pause(false);
    // every answered send reached b's process (not only the proxy): in its history, or received
    // and waiting to be applied (docs/management.md: whisker_peer_lag_messages)
    let held = { written: 0, waiting: 0 };
    for (const deadline = Date.now() + 30_000; held.written + held.waiting < answered.length; ) {
      expect(Date.now(), `b received ${held.written + held.waiting} of ${answered.length}`).toBeLessThan(deadline);
      const metrics = parseMetrics(await (await fetch(`http://127.0.0.1:${managementB}/metrics`)).text());
      held = { written: valueOf(metrics, 'whisker_history_messages', { queue: 'ev/v1' }) ?? 0, waiting: valueOf(metrics, 'whisker_peer_lag_messages', { peer: 'a' }) ?? 0 };
    }
    // the two figures overlap (a frame being applied is in both): the feed's last frames may still
    // be on their way (CI preview ci23 at load 20: the last 100 sends had not reached b)
    await feed.quietFromServer(500);
    const fromPromoted = await promote(a, b, configureB);
    await producer.disconnect();
    console.log(`long apply chain: b held ${held.written} written, ${held.waiting} received and not applied when a was killed`);
    expectWhole('promoted while applying', answered, fromPromoted);
  }, 60_000);

  test('the master steps down and sends arrive while no broker is master, then the slave is made master and the old one follows it: promoted in turn after a kill -9, the old master replays every answered send once, in send order (nemesis seed 2027)', async () => {
    const [a, b] = (await mirrorNodes('history-stepdown', ['a', 'b'])) as [MirrorNode, MirrorNode];
    const configure = (node: MirrorNode, isMaster: boolean) => configureMirror(node, [a, b], isMaster, { channels: { 'ev/v1': { retention } } });
    a.process = await startProcess(configure(a, true));
    // b's disk is slow: what it writes at its promotion is still being written when a follows it
    b.process = await startProcess(configure(b, false), { env: slowIoEnv(30_000) });
    await b.process.waitFor(/in step with the master/, 0, 30_000);
    const producers = [await connect('stepdown-p0', [a.spec, b.spec], { sendTimeout: 30_000 }), await connect('stepdown-p1', [a.spec, b.spec], { sendTimeout: 30_000 })];
    const answered: Array<[number, number]> = [];
    const traffic = pipelining(producers, answered);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // a steps down: for 500 ms no broker is master, both store the clients' copies
    let from = a.process.output().length;
    configure(a, false);
    await a.process.waitFor(/acts as slave/, from);
    await new Promise((resolve) => setTimeout(resolve, 500));
    from = a.process.output().length;
    configure(b, true);
    await a.process.waitFor(/in step with the master/, from, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await traffic.stop();
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // the last feed frames reach a
    const fromMaster = await replayPairs(b);
    const fromPromoted = await promote(b, a, (isMaster) => configure(a, isMaster));
    await Promise.all(producers.map((producer) => producer.disconnect()));
    expectWhole('the master stepped down, then followed the new one', answered, fromPromoted, fromMaster);
  }, 120_000);
});
