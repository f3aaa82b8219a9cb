import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import type { WhiskerClient } from '../../../src/client/client.js';
import type { Done } from '../../../src/client/types.js';
import { connect, freePort, tempDir, until } from '../../support/harness.js';
import { newKeyPair, RawPeer } from '../../support/raw-peer.js';

/**
 * SPEC §8 against a real broker process (dist/, built by `npm test`): SIGKILL mid-run, restart
 * on the same port and data directory, and count what the clients saw.
 */
const root = fileURLToPath(new URL('../../..', import.meta.url));
const processes = new Set<ChildProcess>();

afterEach(() => {
  for (const child of processes) child.kill('SIGKILL');
  processes.clear();
});


interface BrokerProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  /** ms from spawn to the "listening" log line: store replay included */
  readonly startMs: number;
}

interface Setup {
  readonly dir: string;
  readonly port: number;
  readonly host: string;
  readonly storeDir: string;
}

async function setup(overrides: Record<string, unknown> = {}): Promise<Setup> {
  const dir = tempDir('whisker-durability-');
  const port = await freePort();
  const config = { dataDirectory: 'data', registeredClientsPath: 'clients', keysDirectory: 'keys', socketServer: { host: '127.0.0.1', port }, maxItemsInQueue: 1_000_000, logLevel: 'info', ...overrides };
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  return { dir, port, host: `127.0.0.1:${port}@whisker`, storeDir: join(dir, 'data', 'store') };
}

/** `whisker start -c config.json`; resolves once it logged its url */
async function startBroker({ dir }: Setup): Promise<BrokerProcess> {
  const started = Date.now();
  const child = spawn(process.execPath, [join(root, 'bin/whisker'), 'start', '-c', join(dir, 'config.json')], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  processes.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`broker did not start: ${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (/"url":"ws:/.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`broker exited with ${code}: ${output}`));
    });
  });
  return { child, exited, startMs: Date.now() - started };
}

async function kill(broker: BrokerProcess): Promise<void> {
  broker.child.kill('SIGKILL');
  await broker.exited;
  processes.delete(broker.child);
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** the broker compacts while we look: a file listed may be renamed or gone by its stat */
function storeBytes(storeDir: string): number {
  return readdirSync(storeDir).reduce((sum, name) => sum + (statSync(join(storeDir, name), { throwIfNoEntry: false })?.size ?? 0), 0);
}

describe('durability (real broker processes)', () => {
  test('SIGKILL while a producer sends and a consumer acks: every answered send is delivered, acked ones come back only from the in-flight window', async () => {
    const s = await setup();
    let broker = await startBroker(s);
    const TOTAL = 4000;
    const PER_TICK = 10; // every 5 ms: about 2,000 messages/s
    const PREFETCH = 100;
    const deliveries = new Map<number, number>();
    const ackedAt = new Map<number, number>();
    let killedAt = Infinity;
    let ackedThenRedelivered = 0;

    // dedupeWindow 0: the client's guard against two masters would hide redeliveries from us
    const consumer = await connect('dur-consumer', s.host, { dedupeWindow: 0 });
    const handle = consumer.consume('dur/v1/1', { prefetch: PREFETCH }, (err: Error | null, msg?: unknown, done?: Done) => {
      if (err) throw err;
      const { n } = msg as { n: number };
      deliveries.set(n, (deliveries.get(n) ?? 0) + 1);
      if ((ackedAt.get(n) ?? Infinity) < killedAt) ackedThenRedelivered++;
      done!();
      if (!ackedAt.has(n)) ackedAt.set(n, Date.now());
    });
    await handle.ready;

    const producer = await connect('dur-producer', s.host);
    const sentOk = new Set<number>();
    const failed: string[] = [];
    const sends: Promise<void>[] = [];
    let restart: Promise<void> | null = null;
    let unansweredAtKill = 0;
    let ackedAtKill = 0;
    for (let n = 0; n < TOTAL; n++) {
      sends.push(producer.send('dur/v1/1', { n }).then(() => void sentOk.add(n), (error: { code?: string }) => void failed.push(error.code ?? 'unknown')));
      if (n === TOTAL / 2) {
        unansweredAtKill = n + 1 - sentOk.size - failed.length;
        ackedAtKill = ackedAt.size;
        killedAt = Date.now();
        await kill(broker);
        restart = startBroker(s).then((b) => void (broker = b));
      }
      if (n % PER_TICK === 0) await pause(5);
    }
    await restart;
    await Promise.all(sends);
    const missing = () => [...sentOk].filter((n) => !deliveries.has(n));
    await until(() => missing().length === 0, 30_000, 'every answered send delivered').catch((error: Error) => {
      // what the broker holds says whether they are lost or stuck (whisker list, metadata only)
      const held = execFileSync(process.execPath, [join(root, 'bin/whisker'), 'list', '-c', join(s.dir, 'config.json'), '-m', '--json']).toString();
      throw new Error(`${error.message}: ${missing().length} missing (${missing().slice(0, 10).join(', ')}...), ${deliveries.size} delivered; the broker holds ${held.slice(0, 2000)}`);
    });

    const duplicates = [...deliveries.values()].reduce((sum, count) => sum + count - 1, 0);
    console.log(`kill -9 run: sends unanswered at the kill ${unansweredAtKill}, acked before it ${ackedAtKill}, sent ok ${sentOk.size}, send failed ${failed.length} (${[...new Set(failed)].join(',')}), delivered ${deliveries.size} distinct, duplicates ${duplicates}, acked before the kill and delivered again ${ackedThenRedelivered}`);
    expect(sentOk.size + failed.length).toBe(TOTAL);
    expect([...sentOk].filter((n) => !deliveries.has(n))).toEqual([]);
    // in-flight window: up to PREFETCH unacked deliveries, plus acks sent but not yet committed
    // (at 2,000 msg/s, 100 more is 50 ms of acks: one round trip and one fsync with room to spare)
    expect(ackedThenRedelivered).toBeLessThanOrEqual(PREFETCH + 100);
    expect(duplicates).toBeLessThanOrEqual(2 * PREFETCH + 100);
  }, 60_000);

  test('100,000 waiting messages survive a SIGKILL and are delivered in order per id; the drained store shrinks', async () => {
    const s = await setup({ dedupeWindow: 3 });
    let broker = await startBroker(s);
    const TOTAL = 100_000;
    const IDS = 10;
    const producer = await connect('big-producer', s.host, { maxBufferedMessages: 20_000 });
    let started = Date.now();
    const window: Promise<unknown>[] = [];
    for (let i = 0; i < TOTAL; i++) {
      window.push(producer.send(`big/v1/${i % IDS}`, { k: i % IDS, i }));
      if (window.length === 5000) await Promise.all(window.splice(0));
    }
    await Promise.all(window);
    const sendSeconds = (Date.now() - started) / 1000;
    await producer.disconnect();
    const bytesBefore = storeBytes(s.storeDir);
    await kill(broker);

    broker = await startBroker(s);
    started = Date.now();
    const last = new Array<number>(IDS).fill(-1);
    let received = 0;
    let outOfOrder = 0;
    const consumer: WhiskerClient = await connect('big-consumer', s.host, { dedupeWindow: 0 });
    consumer.consume('big/v1/*', { prefetch: 1000 }, (err: Error | null, msg?: unknown, done?: Done) => {
      if (err) throw err;
      const { k, i } = msg as { k: number; i: number };
      if (i <= last[k]!) outOfOrder++;
      last[k] = i;
      received++;
      done!();
    });
    await until(() => received >= TOTAL, 60_000, '100,000 deliveries');
    const deliverSeconds = (Date.now() - started) / 1000;
    await until(() => storeBytes(s.storeDir) < 64 * 1024, 15_000, 'the drained store compacted');
    console.log(`100k restart: sent in ${sendSeconds.toFixed(1)} s (${Math.round(TOTAL / sendSeconds)}/s durable), store ${(bytesBefore / 1e6).toFixed(1)} MB, restart to listening ${broker.startMs} ms, all delivered in ${deliverSeconds.toFixed(1)} s, store after draining ${storeBytes(s.storeDir)} bytes`);
    expect(received).toBe(TOTAL);
    expect(outOfOrder).toBe(0);
    expect(last).toEqual(Array.from({ length: IDS }, (_, k) => TOTAL - IDS + k));
  }, 90_000);

  test('a delivery cut short by SIGKILL comes back after the restart with nbRequeues counting it', async () => {
    const s = await setup();
    const first = await startBroker(s);
    const [consumer, producer] = await Promise.all([connect('holder', s.host), connect('sender', s.host)]);
    const seen: number[] = [];
    await consumer.consume('held/v1/1', (_err, _msg, _done, info) => void seen.push(info!.nbRequeues)).ready;
    await producer.send('held/v1/1', { never: 'acked' });
    await until(() => seen.length === 1, 5000, 'first delivery');
    await new Promise((resolve) => setTimeout(resolve, 50)); // the deliver record rides the next group commit
    await kill(first);
    await startBroker(s);
    await until(() => seen.length === 2, 10_000, 'redelivery after restart');
    expect(seen).toEqual([0, 1]);
    await Promise.all([consumer.disconnect(), producer.disconnect()]);
  });

  test('dedupe across a reconnect and a restart: a second copy of an acked id is answered accepted and not queued again', async () => {
    const s = await setup();
    let broker = await startBroker(s);
    const keys = newKeyPair();
    const peer = async () => {
      const p = await RawPeer.open(s.port);
      await p.login('dedupe-peer', keys);
      return p;
    };
    const publish = async (p: RawPeer, messageId: string, channel = 'dd/v1/1') => {
      p.sendJson({ type: 'publish', messages: [{ messageId, channel, data: { messageId }, created: Date.now() }] });
      const frame = await p.next('results', (f) => f.results.some((r) => r.messageId === messageId));
      return frame.results.find((r) => r.messageId === messageId)!;
    };
    const subscribe = (p: RawPeer) => p.request({ type: 'subscribe', sub: 1, mode: 'consume', endpoint: 'dd', version: 'v1', ids: ['1'] });

    const before = await peer();
    await subscribe(before);
    expect(await publish(before, 'dd-once')).toEqual({ messageId: 'dd-once' });
    await before.delivery('dd-once');
    before.sendJson({ type: 'ack', acks: [{ sub: 1, messageId: 'dd-once', via: '1', ok: true }] });
    // frames of one socket are handled in order: once this send is answered, the ack is on disk
    await publish(before, 'marker', 'other/v1/1');
    // a client that reconnects sends its unanswered sends again with the same id (SPEC §3)
    const reconnected = await peer();
    expect(await publish(reconnected, 'dd-once')).toEqual({ messageId: 'dd-once' });
    await kill(broker);

    broker = await startBroker(s);
    const after = await peer();
    expect(await publish(after, 'dd-once')).toEqual({ messageId: 'dd-once' });
    expect(await publish(after, 'dd-after')).toEqual({ messageId: 'dd-after' });
    await subscribe(after);
    // deliveries of one id leave in acceptance order: a queued copy would come before dd-after
    await after.delivery('dd-after');
    expect(after.deliveries().map((d) => d.messageId)).toEqual(['dd-after']);
  }, 30_000);

  test('a store made unwritable mid-run: E_STORE, no crash, waiting messages still served; it recovers when the disk does', async () => {
    const s = await setup();
    const broker = await startBroker(s);
    const producer = await connect('fail-producer', s.host);
    await producer.send('fail/v1/1', { n: 1 });
    rmSync(s.storeDir, { recursive: true });
    writeFileSync(s.storeDir, 'a file where the store directory was');
    await expect(producer.send('fail/v1/1', { n: 2 })).rejects.toMatchObject({ code: 'E_STORE' });
    await expect(producer.send('fail/v1/1', { n: 3 })).rejects.toMatchObject({ code: 'E_STORE' });
    expect(broker.child.exitCode).toBeNull();

    const got: number[] = [];
    const consumer = await connect('fail-consumer', s.host);
    consumer.consume('fail/v1/1', (err: Error | null, msg?: unknown, done?: Done) => {
      if (err) throw err;
      got.push((msg as { n: number }).n);
      done!();
    });
    await until(() => got.length === 1);
    expect(got).toEqual([1]);

    rmSync(s.storeDir);
    // the store retries a fresh segment every second; until then sends keep failing cleanly
    const deadline = Date.now() + 10_000;
    for (;;) {
      const sent = await producer.send('fail/v1/1', { n: 4 }).then(() => true, (error: { code?: string }) => {
        expect(error.code).toBe('E_STORE');
        return false;
      });
      if (sent) break;
      if (Date.now() > deadline) throw new Error('the store did not recover');
      await pause(50);
    }
    await until(() => got.includes(4));
    expect(broker.child.exitCode).toBeNull();
  }, 30_000);
});
