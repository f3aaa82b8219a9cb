// Heap per waiting message, in process and stable on a loaded machine (it counts bytes, not time):
// the broker's message path without sockets (Router -> queue -> durable LogStore in a temporary
// directory, as startBroker builds them), `count` messages of ~100 B JSON sent to a channel nobody
// subscribes to, 100 per append as a producer's frames bring them. Each message's strings come from
// JSON.parse of a frame, as the session's do. Prints heapUsed and arrayBuffers after a full GC,
// minus the same before the sends, per message; then a consumer takes them all and the longest
// synchronous stretch of the drain (event-loop delay max) is printed too, with its garbage
// collections: their count does not depend on the machine's load (their times do), and the
// longest turns between two setImmediate callbacks, by wall time (with the garbage collections
// inside each), by the process's CPU time (every thread) and by the main thread's CPU time (Linux:
// /proc/thread-self/schedstat; what the turn itself ran, GC on the main thread included, neither
// the time it waited for a core nor the store's and the GC's helper threads).
// Usage: node --expose-gc bench/waiting-heap.mjs [count, default 200,000] [--snapshot=FILE]
// [--turns=FILE: the turns over 20 ms on a --cpu-prof profile's clock, JSON: [start µs, end µs,
// main thread CPU ms]] [--long=MS: the turns that file and the lists name, over MS ms of wall time
// (default 20)]
import { mkdtempSync, openSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { writeHeapSnapshot } from 'node:v8';
import { randomBytes } from 'node:crypto';
import { compilePolicy } from '../dist/broker/access/policy.js';
import { Lifecycle } from '../dist/broker/lifecycle.js';
import { Router } from '../dist/broker/messages/router.js';
import { Replica } from '../dist/broker/mirror/replica.js';
import { Subscription } from '../dist/broker/queue/subscription.js';
import { LogStore } from '../dist/broker/store/log.js';
import { buildConfig } from '../dist/config/load.js';
import { createLogger } from '../dist/runtime/logger.js';
import { makeMessage } from './lib.mjs';

const gc = globalThis.gc;
if (typeof gc !== 'function') {
  console.error('run with node --expose-gc');
  process.exit(2);
}
const args = process.argv.slice(2);
const count = Number(args.find((a) => !a.startsWith('--')) ?? 200_000);
const snapshot = args.find((a) => a.startsWith('--snapshot='))?.slice(11);
const BATCH = 100;
const LONG_MS = Number(args.find((a) => a.startsWith('--long='))?.slice(7) ?? 20);

const dir = mkdtempSync(join(tmpdir(), 'whisker-mem-heap-'));
const config = buildConfig({ logLevel: 'silent', defaultPolicy: 'allow', maxItemsInQueue: 2_000_000, socketServer: { port: 0 } }, dir, null);
const log = createLogger('silent');
const store = new LogStore(join(dir, 'store'), { dedupeWindowMs: config.dedupeWindow * 1000, log, now: Date.now });
const router = new Router({ policy: compilePolicy(config), store, log, now: Date.now, lifecycle: new Lifecycle() });
await router.restore();

const measure = () => {
  gc();
  gc();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, buffers: m.arrayBuffers, rss: m.rss };
};

/** what a producer's frame brings: parsed from text, so the strings are the session's kind */
function frameOf(from) {
  const sends = [];
  for (let i = 0; i < BATCH; i++) sends.push({ messageId: randomBytes(16).toString('hex'), channel: 'bench/v1/*', created: Date.now(), data: makeMessage(from + i, Date.now()) });
  return JSON.parse(JSON.stringify(sends));
}

async function send(n, base) {
  for (let sent = 0; sent < n; sent += BATCH) {
    const now = Date.now();
    const messages = frameOf(base + sent).map((m) => ({ seq: router.nextSeq(), messageId: m.messageId, queue: 'bench/v1', id: '*', data: m.data, created: m.created, acceptedAt: now, from: 'bench-producer', json: JSON.stringify(m.data) }));
    await router.store(messages, true);
  }
}

await send(10_000, 0); // warm-up: the queue, the body window (10,000 bodies stay in memory) and JIT
await new Promise((r) => setTimeout(r, 200));
const before = measure();
await send(count, 10_000);
await new Promise((r) => setTimeout(r, 200));
const after = measure();
const queue = router.queues.get('bench/v1');
const per = (a, b) => ((a - b) / count).toFixed(1);
console.log(`${count.toLocaleString('en-US')} more waiting (depth ${queue.depth.toLocaleString('en-US')}, bodies in memory ${queue.bodiesInMemory}): heap ${per(after.heap, before.heap)} B + array buffers ${per(after.buffers, before.buffers)} B per waiting message; heapUsed ${(after.heap / 1e6).toFixed(1)} MB, rss ${(after.rss / 1e6).toFixed(0)} MB`);
if (snapshot) console.log(`heap snapshot: ${writeHeapSnapshot(snapshot)}`);

// what a sync to a mirror holds while it runs: the master's snapshot of everything held, read
// a chunk of 500 at a time as the feed does (bodies aside): what it keeps, and its longest chunk
{
  const t = performance.now();
  const held = new Replica(router).snapshot().messages;
  const ms = performance.now() - t;
  const during = measure();
  let longest = 0;
  let read = 0;
  for (;;) {
    const c = performance.now();
    const part = held.next(500);
    longest = Math.max(longest, performance.now() - c);
    if (part.length === 0) break;
    read += part.length;
  }
  console.log(`sync snapshot of ${held.length.toLocaleString('en-US')} held: heap ${((during.heap - after.heap) / held.length).toFixed(1)} B + array buffers ${((during.buffers - after.buffers) / held.length).toFixed(1)} B per message while it is kept, taken in ${ms.toFixed(1)} ms; ${read.toLocaleString('en-US')} read 500 at a time, longest chunk ${longest.toFixed(1)} ms`);
}

// the drain: one consumer, prefetch 100, acks each delivery on the next turn
const total = queue.depth;
let got = 0;
let done;
const finished = new Promise((r) => (done = r));
const toAck = [];
const owner = {
  clientName: 'bench-consumer',
  label: 'bench-consumer',
  isWritable: () => true,
  queueDelivery: (d) => {
    toAck.push(d.messageId);
    if (toAck.length === 1) setImmediate(ackAll);
  },
};
const subscription = new Subscription(owner, 1, 'consume', 'bench/v1', 100);
function ackAll() {
  const ids = toAck.splice(0);
  for (const messageId of ids) router.ack(subscription, messageId, '*', true, 0);
  got += ids.length;
  if (got >= total) done();
}
const gcs = { count: 0, ms: 0, longest: 0 };
/** each gc's [start, end, kind] (performance.now() times): which long turns were garbage collections */
const gcSpans = [];
const gcObserver = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gcSpans.push([e.startTime, e.startTime + e.duration, e.detail?.kind ?? e.kind]);
    gcs.count++;
    gcs.ms += e.duration;
    gcs.longest = Math.max(gcs.longest, e.duration);
  }
});
gcObserver.observe({ entryTypes: ['gc'] });
// turn lengths: the gaps between two setImmediate callbacks while the drain runs
const turns = [];
/** turns over LONG_MS (20 ms): [start, end, main thread CPU ms] */
const longTurns = [];
let probing = true;
let lastTurn = performance.now();
// the same turns by the process's CPU time (every thread: the GC's helpers too): on a loaded
// machine a turn's wall time counts the time the process waited for a core, its CPU time does not
const cpuTurns = [];
let lastCpu = process.cpuUsage();
// the main thread's time on a core, ns (Linux; 0 elsewhere): a pread of 4 µs a turn
const schedstat = (() => {
  try {
    return openSync('/proc/thread-self/schedstat', 'r');
  } catch {
    return -1;
  }
})();
const schedBuf = Buffer.alloc(64);
const mainCpuNs = () => (schedstat < 0 ? 0 : Number(schedBuf.toString('latin1', 0, readSync(schedstat, schedBuf, 0, 64, 0)).split(' ')[0]));
const mainTurns = [];
let lastMain = mainCpuNs();
const probe = () => {
  const now = performance.now();
  const cpu = process.cpuUsage();
  const main = mainCpuNs();
  cpuTurns.push((cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000);
  mainTurns.push((main - lastMain) / 1e6);
  lastCpu = cpu;
  lastMain = main;
  turns.push(now - lastTurn);
  if (now - lastTurn > LONG_MS) longTurns.push([lastTurn, now, mainTurns[mainTurns.length - 1]]);
  lastTurn = now;
  if (probing) setImmediate(probe);
};
setImmediate(probe);
const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();
const compactionsBefore = store.stats.compactions;
const t0 = performance.now();
router.subscribe(subscription, ['*']);
await finished;
const seconds = (performance.now() - t0) / 1000;
delay.disable();
probing = false;
await new Promise((r) => setTimeout(r, 20)); // the last gc entries arrive
gcObserver.disconnect();
turns.sort((a, b) => a - b);
const pct = (p) => turns[Math.min(turns.length - 1, Math.floor(turns.length * p))].toFixed(1);
console.log(`drain: ${turns.length.toLocaleString('en-US')} turns, p50 ${pct(0.5)} / p99 ${pct(0.99)} / max ${pct(1)} ms, turns over 20 ms ${turns.filter((t) => t > 20).length}; ${gcs.count} garbage collections, ${Math.round(gcs.ms)} ms in all, longest ${gcs.longest.toFixed(1)} ms`);
cpuTurns.sort((a, b) => a - b);
console.log(`drain: the same turns by process CPU time (all threads), p99 ${cpuTurns[Math.floor(cpuTurns.length * 0.99)].toFixed(1)} / max ${cpuTurns[cpuTurns.length - 1].toFixed(1)} ms, over 20 ms ${cpuTurns.filter((t) => t > 20).length}`);
if (schedstat >= 0) {
  mainTurns.sort((a, b) => a - b);
  console.log(`drain: the same turns by the main thread's CPU time, p99 ${mainTurns[Math.floor(mainTurns.length * 0.99)].toFixed(1)} / max ${mainTurns[mainTurns.length - 1].toFixed(1)} ms, over 20 ms ${mainTurns.filter((t) => t > 20).length}`);
}
{
  // the longest turns, each with the garbage collections inside it (1 scavenge, 2 mark-compact, 4 incremental marking, 8 weak callbacks)
  const inside = ([a, b]) => gcSpans.filter(([s, e]) => s < b && e > a);
  const longest = longTurns.sort((x, y) => y[1] - y[0] - (x[1] - x[0])).slice(0, 8);
  const described = longest.map((t) => {
    const g = inside(t);
    const ms = g.reduce((sum, [s, e]) => sum + Math.min(e, t[1]) - Math.max(s, t[0]), 0);
    return `${(t[1] - t[0]).toFixed(1)} (gc ${ms.toFixed(1)}${g.length ? ' kind ' + g.map((x) => x[2]).join('+') : ''}${schedstat >= 0 ? `, main thread CPU ${t[2].toFixed(1)}` : ''})`;
  });
  console.log(`drain: longest turns over ${LONG_MS} ms, ms (of which gc): ${described.join(', ') || 'none'}`);
  if (schedstat >= 0) {
    const busiest = longTurns.filter((t) => t[2] > 10).sort((x, y) => y[2] - x[2]).slice(0, 8);
    console.log(`drain: turns over ${LONG_MS} ms by the main thread's CPU time, ms (wall): ${busiest.map((t) => `${t[2].toFixed(1)} (${(t[1] - t[0]).toFixed(1)})`).join(', ') || 'none over 10 ms'}`);
  }
  // with --cpu-prof: the turns over 20 ms on the profile's clock (µs, monotonic), for a look at what they ran
  const turnsFile = args.find((a) => a.startsWith('--turns='))?.slice(8);
  if (turnsFile) {
    const offset = Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000;
    writeFileSync(turnsFile, JSON.stringify(longTurns.map(([a, b, main]) => [a * 1000 + offset, b * 1000 + offset, main])));
  }
}
console.log(`drain: ${got.toLocaleString('en-US')} in ${seconds.toFixed(1)} s (${Math.round(got / seconds).toLocaleString('en-US')} msg/s), longest event-loop pause ${(delay.max / 1e6).toFixed(1)} ms; store compactions ${store.stats.compactions - compactionsBefore}`);
await new Promise((r) => setTimeout(r, 200));
const drained = measure();
console.log(`after the drain (depth ${queue.depth}): heap ${((drained.heap - before.heap) / total).toFixed(1)} B + array buffers ${((drained.buffers - before.buffers) / total).toFixed(1)} B per drained message above the warm-up, kept while the ids stay in the dedupe window (${config.dedupeWindow} s); heapUsed ${(drained.heap / 1e6).toFixed(1)} MB`);
const drainedSnapshot = args.find((a) => a.startsWith('--drained-snapshot='))?.slice(19);
if (drainedSnapshot) console.log(`heap snapshot after the drain: ${writeHeapSnapshot(drainedSnapshot)}`);
router.close();
await store.close();
rmSync(dir, { recursive: true, force: true });
