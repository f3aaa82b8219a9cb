/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// Scenario 4, memory: a master a and a slave b (configured mode), each started with --expose-gc and the nemesis's
// gc-every.mjs (a full GC every 2 s, so the lowest nodejs_heap_size_used_bytes of each 10 s is the heap after GC).
// One producer at about RATE messages/s (default 500; 5 sends every 10 ms, ~200 B each) to a plain queue and to a
// retained channel (retention.seconds 60), one consumer (prefetch 10) acking everything, for MIN minutes (default 4).
// /metrics of both every 250 ms. Checks: once warm (75 s: the dedupe tables fill for dedupeWindow 60 s), the slope of the
// 10 s floors of the slave's heap is at most 4 MiB/min (the nemesis's bound) and near the master's; queues drained.
// Promise: issue 27 item 11 "a slave's memory is as flat as its master's under steady traffic".
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeNodes, start, sleep, finish, waitFor, check, metrics, metric, mkClient, keyPair, up } from './common.mjs';
const MIN = Number(process.env.MIN ?? 4); const RATE = Number(process.env.RATE ?? 500);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
console.log('start', new Date().toISOString(), up(), { MIN, RATE });
const nodes = await makeNodes(['a', 'b'], { logLevel: 'info', heartbeatTimeout: 2, dedupeWindow: 60,
  channels: { 'rt/v1': { retention: { seconds: 60 } } } });
for (const n of nodes) n.nodeArgs = ['--expose-gc', '--import', join(root, 'test', 'nemesis', 'gc-every.mjs')];
await Promise.all(nodes.map(start));
const t0 = Date.now();
await waitFor(() => /"msg":"in step with the master/.test(nodes[1].log), 30000, 100);
const P = await mkClient(nodes, `p-${process.pid}`, keyPair(), { sendTimeout: 10000 });
const C = await mkClient(nodes, `c-${process.pid}`, keyPair());
let got = 0; await C.consume('jobs/v1/x', { prefetch: 10 }, (err, m, done) => { if (!err) got++; done(); }).ready;
await C.consume('rt/v1/x', { prefetch: 10 }, (err, m, done) => { if (!err) got++; done(); }).ready;
let run = true; let sent = 0; let failed = 0; const body = 'y'.repeat(150);
const loop = (async () => { while (run) { for (let i = 0; i < RATE / 100; i++) { const ch = i % 2 ? 'rt/v1/x' : 'jobs/v1/x'; P.send(ch, { i: sent++, body }).catch(() => failed++); } await sleep(10); } })();
const samples = { a: [], b: [] };
const end = Date.now() + MIN * 60000;
while (Date.now() < end) {
  for (const n of nodes) { const m = await metrics(n); const h = metric(m, 'nodejs_heap_size_used_bytes'); if (h) samples[n.id].push([Date.now() - t0, h, metric(m, 'whisker_peer_lag_messages') ?? 0]); }
  await sleep(250);
}
run = false; await loop; await sleep(3000);
function slope(s) {
  const w = new Map(); for (const [t, h] of s) { if (t < 75000) continue; const k = Math.floor(t / 10000); w.set(k, Math.min(w.get(k) ?? Infinity, h)); }
  const pts = [...w].map(([k, h]) => [k * 10 + 5, h / 1048576]); const n = pts.length; if (n < 3) return { n };
  const mx = pts.reduce((s, p) => s + p[0], 0) / n; const my = pts.reduce((s, p) => s + p[1], 0) / n;
  const b = pts.reduce((s, p) => s + (p[0] - mx) * (p[1] - my), 0) / pts.reduce((s, p) => s + (p[0] - mx) ** 2, 0);
  return { windows: n, mibPerMin: +(b * 60).toFixed(2), floorsMiB: pts.map((p) => +p[1].toFixed(1)).join(' ') };
}
const sa = slope(samples.a); const sb = slope(samples.b);
const maxLag = Math.max(...samples.b.map((x) => x[2]));
const depth = {}; for (const n of nodes) depth[n.id] = metric(await metrics(n), 'whisker_queue_depth');
const rate = Math.round(sent / (MIN * 60));
check(`g4a slave heap flat: ${MIN} min at ~${rate} msg/s, 10 s floors after GC from 75 s on: slave <= 4 MiB/min and the master's`, sb.mibPerMin <= 4 && sa.mibPerMin <= 4,
  { master: sa, slave: sb, slaveMaxLag: maxLag, sent, failed, consumed: got, queueDepthEnd: depth, load: up() });
await finish(0);
