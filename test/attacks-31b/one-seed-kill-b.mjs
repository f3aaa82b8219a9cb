// A client given ONE broker of set a (a's master) uses q/a (pinned to a) and q/b (pinned to b),
// 50 sends/s each, a consumer per queue; set b's master is killed -9.
// Promise: client.md "Clusters" (a single broker as hosts reaches every queue; a set down affects its own
// queues only; "when that set's master dies the client goes on with the broker elected next"), SPEC §13.
// Expect: set a's queue never pauses, set b's queue resumes with b's new master, 0 answered sends lost.
// Usage: nice -n 10 node test/attacks-31b/one-seed-kill-b.mjs
import { startEtcd, startCluster, mkClient, tracker, sleep, load, kill9, waitMaster } from '../attacks-31/lib.mjs';

const etcd = await startEtcd(); await etcd.start();
const nodes = await startCluster(etcd.url, { a: ['a1', 'a2'], b: ['b1', 'b2'] }, () => ({ channels: { 'qa/v1': { set: 'a' }, 'qb/v1': { set: 'b' } } }));
const ma = await waitMaster(nodes, 'a'); const mb = await waitMaster(nodes, 'b');
console.log(`masters a=${ma.id} b=${mb.id}; ${load()}`);
const opts = { sendTimeout: 15000 };
const prod = await mkClient('p1', [ma.spec], opts); const cons = await mkClient('c1', [ma.spec], opts);
const t = { qa: tracker(), qb: tracker() }; const errs = []; const at = { qa: [], qb: [] };
for (const q of ['qa', 'qb']) {
  const h = cons.consume(`${q}/v1/*`, (err, m, done) => { if (err) { errs.push(`${q} ${err.code}`); return; } t[q].add(m); at[q].push(Date.now()); done(); });
  await h.ready;
}
const ok = { qa: new Set(), qb: new Set() }; const fails = { qa: {}, qb: {} }; let go = true; let n = 0;
const loop = (async () => { while (go) { for (const q of ['qa', 'qb']) { const s = n; prod.send(`${q}/v1/${s % 5}`, { id: s % 5, seq: s }).then(() => ok[q].add(`${s % 5}:${s}`), (e) => { fails[q][e.code] = (fails[q][e.code] ?? 0) + 1; }); } n++; await sleep(20); } })();
await sleep(4000);
const killAt = Date.now(); await kill9(mb); console.log(`killed -9 ${mb.id}; ${load()}`);
const nb = await waitMaster(nodes, 'b', 30000).catch(() => null);
console.log(`b's new master ${nb?.id} after ${nb ? nb.masterSince - killAt : '-'} ms`);
await sleep(10000); go = false; await loop;
const end = Date.now() + 30000;
while (Date.now() < end && !['qa', 'qb'].every((q) => [...ok[q]].every((k) => t[q].seen.has(k)))) await sleep(250);
await sleep(1000);
const gapAfter = (q) => { const xs = at[q].filter((x) => x >= killAt - 500 && x <= killAt + 8000); let g = 0; for (let i = 1; i < xs.length; i++) g = Math.max(g, xs[i] - xs[i - 1]); return g; };
const firstBAfter = at.qb.find((x) => x > killAt + 200);
const res = {}; const broken = [];
for (const q of ['qa', 'qb']) {
  const lost = [...ok[q]].filter((k) => !t[q].seen.has(k)).length;
  res[q] = { sends: n, ok: ok[q].size, fails: fails[q], got: t[q].count, lost, dups: t[q].dups, breaks: t[q].breaks, maxGapMsAroundKill: gapAfter(q) };
  if (lost) broken.push(`${q} lost ${lost}`);
  if (Object.keys(fails[q]).length) broken.push(`${q} send failures ${JSON.stringify(fails[q])}`);
}
if (res.qa.maxGapMsAroundKill > 2000) broken.push(`set a's queue paused ${res.qa.maxGapMsAroundKill} ms`);
if (errs.length) broken.push(`handler errors ${errs.join(',')}`);
console.log(JSON.stringify({ res, firstQbDeliveryAfterKillMs: firstBAfter ? firstBAfter - killAt : null, errs, clientErrors: [...new Set([...prod.errors, ...cons.errors])], load: load() }));
console.log(broken.length ? `BROKEN: ${broken.join('; ')}` : 'HELD');
process.exit(broken.length ? 1 : 0);
