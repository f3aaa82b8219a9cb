// The broker's CPU per message on the prefetch-100 and fan-out-to-4 paths, in process and
// without sockets: the frames a session reads (a producer's publish frames and a consumer's ack
// frames, as text decoded by decodeClientFrame), Intake -> Router -> durable LogStore in a
// temporary directory -> queue -> deliver frames (DeliverFrames, what a session writes), acks.
// The producer keeps `window` sends unanswered, 100 to a frame (the bench's producer: 2,000); the
// receivers ack what they got each turn, 100 to a frame. Prints the process's CPU time per
// message (per delivery for fan-out): the harness's own share (frame texts, ack texts) is in it,
// and is the same for two builds, so compare builds with it (DIST=dir for another build's dist/),
// alternating them; ws, sockets and writev are not in it (docs/performance.md).
// Usage: node bench/flow-cpu.mjs [p100|fanout4] [messages, default 50,000] [rounds, default 3]
// Env: DIST, FAKE_FS=1, MEMORY_WINDOW, ALLOC_PROF=file, MARK=1 (below), WARM (warm-up messages,
// default min(messages, 20,000)), EVENT_DELAY_MS (the store's hold of state changes, default 2),
// DEDUPE_WINDOW (s, default 120). Instructions rather than CPU time (a loaded machine's CPU time
// moves 10-20% between rounds): docs/performance.md#method-notes, "instructions per message".
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PerformanceObserver } from 'node:perf_hooks';
import { makeMessage } from './lib.mjs';

const dist = pathToFileURL(`${resolve(process.env.DIST ?? new URL('../dist', import.meta.url).pathname)}/`).href;
const { compilePolicy } = await import(`${dist}broker/access/policy.js`);
const { Lifecycle } = await import(`${dist}broker/lifecycle.js`);
const { Router } = await import(`${dist}broker/messages/router.js`);
const { Intake } = await import(`${dist}broker/messages/intake.js`);
const { Subscription } = await import(`${dist}broker/queue/subscription.js`);
const { DeliverFrames } = await import(`${dist}broker/session/deliver-frames.js`);
const { LogStore } = await import(`${dist}broker/store/log.js`);
const { decodeClientFrame } = await import(`${dist}protocol/frames.js`);
const { buildConfig } = await import(`${dist}config/load.js`);
const { createLogger } = await import(`${dist}runtime/logger.js`);

const args = process.argv.slice(2);
const row = args[0] ?? 'p100';
const count = Number(args[1] ?? 50_000);
const rounds = Number(args[2] ?? 3);
const window = Number(process.env.WINDOW ?? 2000);
const FRAME = 100;
const receivers = row === 'fanout4' ? 4 : 1;
const mode = row === 'fanout4' ? 'listen' : 'consume';

/**
 * FAKE_FS=1: the log's files in memory, each call answered on the next turn: the same work in the
 * same order every run (a real disk's fsync times change how deep the queue gets), and no wait
 */
const fakeFs = () => {
  const files = new Map();
  const later = (value) => new Promise((r) => setImmediate(() => r(value)));
  const file = (path) => {
    if (!files.has(path)) files.set(path, { chunks: [], starts: [], size: 0 });
    const f = files.get(path);
    return {
      writesAreDurable: true,
      writev: (buffers, position) => {
        if (position !== f.size) throw new Error('fake fs: appends only');
        let n = 0;
        for (const b of buffers) {
          f.starts.push(f.size + n);
          f.chunks.push(Buffer.from(b));
          n += b.length;
        }
        f.size += n;
        return later({ bytesWritten: n });
      },
      read: (buffer, offset, length, position) => {
        // the chunk holding `position`, then on
        let lo = 0;
        let hi = f.starts.length - 1;
        while (lo < hi) {
          const mid = (lo + hi + 1) >> 1;
          if (f.starts[mid] <= position) lo = mid;
          else hi = mid - 1;
        }
        let n = 0;
        for (let i = lo; i < f.chunks.length && n < length; i++) {
          const from = Math.max(0, position + n - f.starts[i]);
          n += f.chunks[i].copy(buffer, offset + n, from, Math.min(f.chunks[i].length, from + length - n));
        }
        return later({ bytesRead: n });
      },
      datasync: () => later(),
      truncate: () => later(),
      stat: async () => ({ size: f.size, nlink: 1 }),
      close: () => later(),
    };
  };
  return {
    open: async (path) => file(path),
    readdir: async (dir) => [...files.keys()].filter((p) => p.startsWith(`${dir}/`)).map((p) => p.slice(dir.length + 1)).filter((n) => !n.includes('/')),
    mkdir: async () => {},
    rename: async (from, to) => {
      files.set(to, files.get(from));
      files.delete(from);
    },
    unlink: async (path) => void files.delete(path),
  };
};

let idCounter = 0;
const hex = (n) => n.toString(16).padStart(32, '0');

async function once(n) {
  const dir = mkdtempSync(join(tmpdir(), 'whisker-flow-cpu-'));
  const config = buildConfig({ logLevel: 'silent', defaultPolicy: 'allow', maxItemsInQueue: 2_000_000, socketServer: { port: 0 }, ...(process.env.DEDUPE_WINDOW ? { dedupeWindow: Number(process.env.DEDUPE_WINDOW) } : {}), ...(process.env.MEMORY_WINDOW ? { memoryWindow: Number(process.env.MEMORY_WINDOW) } : {}) }, dir, null);
  const log = createLogger('silent');
  const store = new LogStore(join(dir, 'store'), { dedupeWindowMs: config.dedupeWindow * 1000, log, now: Date.now, ...(process.env.EVENT_DELAY_MS ? { eventDelayMs: Number(process.env.EVENT_DELAY_MS) } : {}), ...(process.env.FAKE_FS ? { fs: fakeFs() } : {}) });
  const lifecycle = new Lifecycle();
  const router = new Router({ policy: compilePolicy(config), store, log, now: Date.now, lifecycle });
  await router.restore();
  const intake = new Intake(router, lifecycle);
  const maxPayload = config.limits.maxPayloadBytes;

  let delivered = 0;
  const expected = n * receivers;
  let finish;
  const finished = new Promise((r) => (finish = r));
  const subs = [];
  for (let i = 0; i < receivers; i++) {
    const frames = new DeliverFrames();
    let toAck = [];
    let scheduled = false;
    const owner = {
      clientName: mode === 'listen' ? `bench-listener-${i}` : 'bench-consumer',
      label: 'bench',
      isWritable: () => true,
      queueDelivery(d, json) {
        frames.add(d, json, maxPayload, 1000);
        toAck.push(d.messageId);
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      },
    };
    const sub = new Subscription(owner, 1, mode, 'bench/v1', 100);
    // the session's flush, then the receiver's acks on a later turn, 100 to a frame
    const flush = () => {
      scheduled = false;
      frames.take();
      const ids = toAck;
      toAck = [];
      setImmediate(() => {
        for (let at = 0; at < ids.length; at += FRAME) {
          let text = '{"type":"ack","acks":[';
          const end = Math.min(ids.length, at + FRAME);
          for (let k = at; k < end; k++) text += `${k > at ? ',' : ''}{"sub":1,"messageId":"${ids[k]}","via":"1","ok":true}`;
          const frame = decodeClientFrame(Buffer.from(`${text}]}`).toString());
          for (const ack of frame.acks) router.ack(sub, ack.messageId, ack.via, ack.ok, ack.delaySeconds ?? 0);
        }
        delivered += ids.length;
        if (delivered >= expected) finish();
      });
    };
    router.subscribe(sub, ['1']);
    subs.push(sub);
  }

  // the producer: `window` sends unanswered, a frame of up to 100 per turn each time
  let sent = 0;
  let outstanding = 0;
  const publishFrame = (k) => {
    let text = '{"type":"publish","messages":[';
    const now = Date.now();
    for (let j = 0; j < k; j++) text += `${j > 0 ? ',' : ''}{"messageId":"${hex(++idCounter)}","channel":"bench/v1/1","data":${JSON.stringify(makeMessage(sent + j, now))},"created":${now}}`;
    return Buffer.from(`${text}]}`);
  };
  let maxDepth = 0;
  const produce = () => {
    maxDepth = Math.max(maxDepth, router.queues.get('bench/v1')?.depth ?? 0);
    while (outstanding < window && sent < n) {
      const k = Math.min(FRAME, n - sent, window - outstanding);
      const frame = decodeClientFrame(publishFrame(k).toString());
      sent += k;
      outstanding += k;
      intake.publish('bench-producer', frame.messages).then((results) => {
        outstanding -= results.length;
        if (results.some((r) => r.error)) throw new Error(`send refused: ${JSON.stringify(results.find((r) => r.error))}`);
        produce();
      });
    }
  };
  let gcs = 0;
  const gcObserver = new PerformanceObserver((list) => void (gcs += list.getEntries().length));
  gcObserver.observe({ entryTypes: ['gc'] });
  if (process.env.MARK) console.log('MARK start');
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  produce();
  await finished;
  const cpu = process.cpuUsage(cpu0);
  if (process.env.MARK) console.log('MARK end');
  const seconds = (performance.now() - t0) / 1000;
  await new Promise((r) => setTimeout(r, 20));
  gcObserver.disconnect();
  router.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return { us: (cpu.user + cpu.system) / expected, perSecond: expected / seconds, maxDepth, gcs };
}

await once(process.env.WARM ? Number(process.env.WARM) : Math.min(count, 20_000)); // warm-up
if (process.env.ALLOC_PROF) {
  // what the rounds allocate, collected objects too (the inspector's sampling heap profiler)
  const { Session } = await import('node:inspector/promises');
  const { writeFileSync } = await import('node:fs');
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  process.on('beforeExit', async () => {
    if (!session) return;
    const { profile } = await session.post('HeapProfiler.stopSampling');
    writeFileSync(process.env.ALLOC_PROF, JSON.stringify(profile));
    session.disconnect();
    process.exit(0);
  });
}
for (let r = 0; r < rounds; r++) {
  const m = await once(count);
  console.log(`${row}: ${m.us.toFixed(2)} µs CPU per ${receivers > 1 ? 'delivery' : 'message'}, ${Math.round(m.perSecond).toLocaleString('en-US')} per second, deepest queue ${m.maxDepth.toLocaleString('en-US')}, ${m.gcs} garbage collections`);
}
