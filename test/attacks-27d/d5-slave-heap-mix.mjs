// Issue 27 item 11 from a new angle: a slave's heap under a traffic mix other than c4's single consumer. Docs: issue 27
// item 11 ("a slave's memory is as flat as its master's under steady traffic"), operations.md#the-nemesis (heap check).
// Master a + slave b (configured mode), both with --expose-gc --import test/nemesis/gc-every.mjs (full GC every 2 s).
// Channel mix/v1 with retention (maxBytes 1 MiB, so the history is trimmed all along); a producer at RATE msg/s (1 KB)
// over 10 ids; a consumer of ids 0..9 that nacks every 5th delivery once (done(false, 1): requeued in 1 s) and acks the rest; two
// listener names on mix/v1/*. For MINUTES; heap floor of each 10 s window after WARM s, least-squares slope (MiB/min).
import { makeNodes, start, mkClient, keyPair, sleep, check, finish, metrics, metric, waitFor, health } from './harness.mjs';
import { execFileSync } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const RATE = Number(process.env.RATE ?? 300), MINUTES = Number(process.env.MINUTES ?? 3.5), WARM = Number(process.env.WARM ?? 75);
const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up(), { RATE, MINUTES, WARM });
const gcEvery = join(dirname(fileURLToPath(import.meta.url)), '..', 'nemesis', 'gc-every.mjs');
const nodes = await makeNodes(['a', 'b'], { dedupeWindow: 60, logLevel: 'warn', channels: { 'mix/v1': { retention: { maxBytes: 1048576 }, maxItemsInQueue: 100000 } } });
for (const n of nodes) n.nodeArgs = ['--expose-gc', '--import', gcEvery];
await Promise.all(nodes.map(start));
const T0 = Date.now();
await waitFor(async () => (await health(nodes[1])).status === 200, 30000, 200);
const IDS = Array.from({ length: 10 }, (_, i) => String(i));
const acked = new Set(); let nacks = 0; const nacked = new Set();
const cc = await mkClient(nodes, 'd5-cons', keyPair(), { handlerRetry: { initialSeconds: 1, factor: 1, maxSeconds: 1 } });
await cc.consume({ endpoint: 'mix', version: 'v1', ids: IDS }, { prefetch: 20 }, (err, msg, done, info) => {
  if (err) return; if (msg.i % 5 === 0 && !nacked.has(info.messageId)) { nacked.add(info.messageId); nacks++; done(false, 1); } else { acked.add(info.messageId); done(); } }).ready;
const lis = []; for (const k of [0, 1]) { const l = await mkClient(nodes, `d5-l${k}`, keyPair()); l.n = 0; await l.listen('mix/v1/*', (err) => { if (!err) l.n++; }).ready; lis.push(l); }
const p = await mkClient(nodes, 'd5-p', keyPair(), { sendTimeout: 30000 });
const body = 'x'.repeat(1000); let sent = 0, ok = 0, bad = 0; let run = true; const ids = [];
const loop = (async () => { const tick = 20, per = Math.max(1, Math.round(RATE * tick / 1000)); let next = Date.now();
  while (run) { for (let i = 0; i < per; i++) { sent++; p.send(`mix/v1/${sent % 10}`, { i: sent, body }, (err, _n, info) => { if (err) bad++; else { ok++; ids.push(info.messageId); } }); }
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
await waitFor(() => ids.every((id) => acked.has(id)), 30000, 200);
function slope(series) {
  const w = new Map(); for (const [t, v] of series) { if (t < WARM) continue; const k = Math.floor(t / 10); w.set(k, Math.min(w.get(k) ?? Infinity, v)); }
  const pts = [...w].map(([k, v]) => [k * 10 + 5, v / 1048576]);
  const n = pts.length, mx = pts.reduce((s, q) => s + q[0], 0) / n, my = pts.reduce((s, q) => s + q[1], 0) / n;
  const b = pts.reduce((s, q) => s + (q[0] - mx) * (q[1] - my), 0) / pts.reduce((s, q) => s + (q[0] - mx) ** 2, 0);
  return { windows: n, mibPerMin: +(b * 60).toFixed(2), firstFloorMiB: +pts[0][1].toFixed(1), lastFloorMiB: +pts.at(-1)[1].toFixed(1) };
}
const sa = slope(heap.a), sb = slope(heap.b);
console.log(up());
check(`d5 slave b heap floor flat once warm under consume+nack+2 listeners+retention (<= 4 MiB/min; master ${sa.mibPerMin} MiB/min)`, sb.mibPerMin <= 4,
  { slave: sb, master: sa, maxSlaveLag: Math.max(...lag), sent, ok, bad, acked: acked.size, nacks, notAcked: ids.filter((id) => !acked.has(id)).length, listened: lis.map((l) => l.n) });
await p.disconnect(); await cc.disconnect(); for (const l of lis) await l.disconnect();
await finish(0);
