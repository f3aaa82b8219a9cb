// Issue 27 item 11: a slave's heap flat under steady traffic with a consumer. Master a + slave b (configured mode),
// both started with --expose-gc --import test/nemesis/gc-every.mjs (a full GC every 2 s, as the nemesis), dedupeWindow
// 60 s (as the nemesis). A producer at RATE msg/s (default 500, 1 KB bodies), one consumer acking at once, for MINUTES
// (default 5). /metrics nodejs_heap_size_used_bytes of both every 1 s; floor of each 10 s window; least-squares slope
// over the windows after WARM s (75, the nemesis's warm point). Promise (issue 27 item 11 / operations.md#the-nemesis
// heap check): a slave's heap as flat as its master's, at most 4 MiB a minute once warm.
import { makeNodes, start, mkClient, keyPair, sleep, check, finish, metrics, metric, waitFor, health } from './harness.mjs';
import { execFileSync } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const RATE = Number(process.env.RATE ?? 500), MINUTES = Number(process.env.MINUTES ?? 5), WARM = Number(process.env.WARM ?? 75);
const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up(), { RATE, MINUTES, WARM });
const gcEvery = join(dirname(fileURLToPath(import.meta.url)), '..', 'nemesis', 'gc-every.mjs');
const nodes = await makeNodes(['a', 'b'], { dedupeWindow: 60, logLevel: 'warn' });
for (const n of nodes) n.nodeArgs = ['--expose-gc', '--import', gcEvery];
await Promise.all(nodes.map(start));
const T0 = Date.now();
await waitFor(async () => (await health(nodes[1])).status === 200, 30000, 200);
const CH = 'jobs/v1/x';
const seen = new Set(); let dup = 0;
const cc = await mkClient(nodes, 'c4-cons', keyPair(), { sendTimeout: 30000 });
const hc = cc.consume(CH, { prefetch: 20 }, (err, msg, done, info) => { if (err) return; if (seen.has(info.messageId)) dup++; seen.add(info.messageId); done(); });
await hc.ready;
const p = await mkClient(nodes, 'c4-p', keyPair(), { sendTimeout: 30000 });
const body = 'x'.repeat(1000); let sent = 0, ok = 0, bad = 0; let run = true; const ids = [];
const loop = (async () => { const tick = 20, per = Math.max(1, Math.round(RATE * tick / 1000)); let next = Date.now();
  while (run) { for (let i = 0; i < per; i++) { sent++; p.send(CH, { i: sent, body }, (err, _n, info) => { if (err) bad++; else { ok++; ids.push(info.messageId); } }); }
    next += tick; await sleep(Math.max(0, next - Date.now())); } })();
const heap = { a: [], b: [] }; const lag = [];
const END = T0 + MINUTES * 60000;
while (Date.now() < END) {
  const t = (Date.now() - T0) / 1000;
  for (const n of nodes) { const m = await metrics(n); const v = metric(m, 'nodejs_heap_size_used_bytes'); if (v) heap[n.id].push([t, v]); if (n.id === 'b') lag.push(metric(m, 'whisker_peer_lag_messages') ?? 0); }
  await sleep(1000);
}
run = false; await loop;
await waitFor(() => ok + bad >= sent, 30000, 200);
await waitFor(() => ids.every((id) => seen.has(id)), 30000, 200);
function slope(series) {
  const w = new Map(); for (const [t, v] of series) { if (t < WARM) continue; const k = Math.floor(t / 10); w.set(k, Math.min(w.get(k) ?? Infinity, v)); }
  const pts = [...w].map(([k, v]) => [k * 10 + 5, v / 1048576]);
  const n = pts.length, mx = pts.reduce((s, p) => s + p[0], 0) / n, my = pts.reduce((s, p) => s + p[1], 0) / n;
  const b = pts.reduce((s, p) => s + (p[0] - mx) * (p[1] - my), 0) / pts.reduce((s, p) => s + (p[0] - mx) ** 2, 0);
  return { windows: n, mibPerMin: +(b * 60).toFixed(2), firstFloorMiB: +pts[0][1].toFixed(1), lastFloorMiB: +pts.at(-1)[1].toFixed(1) };
}
const sa = slope(heap.a), sb = slope(heap.b);
const lost = ids.filter((id) => !seen.has(id)).length;
console.log(up());
check(`c4 slave b heap floor flat once warm (<= 4 MiB/min; master ${sa.mibPerMin} MiB/min)`, sb.mibPerMin <= 4, { slave: sb, master: sa, maxSlaveLag: Math.max(...lag), sent, ok, bad, consumed: seen.size, lost, dup });
check('c4 [info] master a heap floor flat once warm (<= 4 MiB/min)', sa.mibPerMin <= 4, sa);
await p.disconnect(); await cc.disconnect();
await finish(0);
