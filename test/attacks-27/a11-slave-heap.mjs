/* eslint-disable no-undef, no-empty, @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27): Node 20 global fetch, best-effort cleanup, figures kept for reading */
// Issue 27 item 11: a slave's heap (after GC) stays as flat as its master's under steady consumer traffic.
// Configured master a + slave b, one producer and one consumer (sends and acks go to both), RATE msg/s for MINUTES.
// Heap floors: lowest nodejs_heap_size_used_bytes per 10 s window (brokers run with --expose-gc and a GC every 2 s),
// least-squares slope from WARM s on. Env: RATE (300), MINUTES (4), WARM (75).
import { makeNodes, start, metrics, metric, mkClient, keyPair, sleep, check, finish, health, port, startEtcdAt, electionBlock, waitFor } from './harness.mjs';
const ELECTION = process.env.ELECTION === '1'; // an election block (real etcd, leaseTtl 2) instead of a configured master
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
const RATE = Number(process.env.RATE ?? 300), MINUTES = Number(process.env.MINUTES ?? 4), WARM = Number(process.env.WARM ?? 75);
const here = dirname(fileURLToPath(import.meta.url));
let etcd; if (ELECTION) { etcd = await startEtcdAt(await port(), await port()); await etcd.start(); }
const nodes = await makeNodes(['a', 'b'], { dedupeWindow: 30, logLevel: 'warn', ...(ELECTION ? { election: electionBlock(etcd.url, '/atk27/a11-' + process.pid, 2), heartbeatTimeout: 2 } : {}) });
for (const n of nodes) n.nodeArgs = ['--expose-gc', '--import', join(here, 'gc-every.mjs')];
await Promise.all(nodes.map(start));
if (ELECTION) await waitFor(async () => (await Promise.all(nodes.map(health))).some((h) => h.body?.role === 'master'), 60000, 200);
const t0 = Date.now();
const cons = await mkClient(nodes, 'cons', keyPair());
let acked = 0;
const h = cons.consume('heap/v1/1', { prefetch: 20 }, (err, msg, done) => { if (!err) { done(); acked++; } });
await h.ready;
const prod = await mkClient(nodes, 'prod', keyPair(), { sendTimeout: 20000 });
let sent = 0, ok = 0, failed = 0, run = true;
const body = { pad: 'x'.repeat(200) };
const producer = (async () => {
  const tp = Date.now(); // catch up with the wall clock each tick, so a late timer does not lower the rate
  while (run) { const due = Math.floor(((Date.now() - tp) / 1000) * RATE) - sent; for (let i = 0; i < due; i++) { sent++; prod.send('heap/v1/1', { ...body, s: sent }, (e) => { if (e) failed++; else ok++; }); } await sleep(50); }
})();
const samples = { a: [], b: [] };
const end = t0 + MINUTES * 60000;
while (Date.now() < end) {
  for (const n of nodes) { const m = await metrics(n); const v = metric(m, 'nodejs_heap_size_used_bytes'); if (v) samples[n.id].push({ t: (Date.now() - t0) / 1000, v, lag: metric(m, 'whisker_peer_lag_messages') ?? 0 }); }
  await sleep(1000);
}
run = false; await producer; await sleep(3000);
function slope(arr) {
  const w = new Map(); for (const s of arr) { if (s.t < WARM) continue; const k = Math.floor(s.t / 10); if (!w.has(k) || w.get(k).v > s.v) w.set(k, s); }
  const pts = [...w.values()]; const n = pts.length; if (n < 3) return { n };
  const mx = pts.reduce((a, p) => a + p.t, 0) / n, my = pts.reduce((a, p) => a + p.v, 0) / n;
  const b = pts.reduce((a, p) => a + (p.t - mx) * (p.v - my), 0) / pts.reduce((a, p) => a + (p.t - mx) ** 2, 0);
  return { n, mibPerMin: +(b * 60 / 1048576).toFixed(2), firstMiB: +(pts[0].v / 1048576).toFixed(1), lastMiB: +(pts.at(-1).v / 1048576).toFixed(1), maxLag: Math.max(...arr.map((s) => s.lag)) };
}
const roles = await Promise.all(nodes.map(async (n) => (await health(n)).body?.role));
const mi = ELECTION ? Math.max(0, roles.indexOf('master')) : 0;
const sa = slope(samples[nodes[mi].id]), sb = slope(samples[nodes[1 - mi].id]);
console.log('roles at the end', roles.join(','), 'election', ELECTION);
console.log(`sent ${sent} ok ${ok} failed ${failed} acked ${acked} rate ${RATE}/s for ${MINUTES} min`);
check('11 slave heap floor flat like the master (<= max(1, master+1) MiB/min once warm)', sb.mibPerMin <= Math.max(1, sa.mibPerMin + 1), { master: sa, slave: sb });
await cons.disconnect(); await prod.disconnect();
await finish(0);
