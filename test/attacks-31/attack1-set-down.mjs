// Attack 1: two sets of two brokers + one etcd; 8 queues (4 pinned to a, 4 to b) under traffic;
// kill -9 set a's master. Promise (issue 31 §6, operations.md "Placement"): other sets untouched
// (set-down.test.ts: b paused at most 350 ms), 0 answered sends lost on both sets.
// The clients are given set a's hosts only (the killed master is one of their seeds).
// Usage: nice -n 10 node test/attacks-31/attack1-set-down.mjs
import { startEtcd, startCluster, mkClient, tracker, sleep, load, kill9, waitMaster } from './lib.mjs';

const RATE = 600; // total msg/s over 8 queues
const queues = ['qa0', 'qa1', 'qa2', 'qa3', 'qb0', 'qb1', 'qb2', 'qb3'];
const channels = Object.fromEntries(queues.map((q) => [`${q}/v1`, { set: q[1], prefetch: 10 }]));
const etcd = await startEtcd(); await etcd.start();
const nodes = await startCluster(etcd.url, { a: ['a1', 'a2'], b: ['b1', 'b2'] }, () => ({ channels }));
const ma = await waitMaster(nodes, 'a'); const mb = await waitMaster(nodes, 'b');
console.log(`masters a=${ma.id} b=${mb.id}; ${load()}`);
const hostsA = nodes.filter((n) => n.set === 'a').map((n) => n.spec);
const cons = await mkClient('cons', hostsA); const prod = await mkClient('prod', hostsA);
const tr = Object.fromEntries(queues.map((q) => [q, tracker()]));
const deliveriesB = []; // timestamps of deliveries on set b queues
for (const q of queues) {
  const h = cons.consume(`${q}/v1/*`, { prefetch: 10 }, (err, m, done) => { if (err) { console.log(q, 'err', err.code); return; } tr[q].add(m); if (q[1] === 'b') deliveriesB.push(Date.now()); done(); });
  await h.ready;
}
const ok = new Set(); const fails = {}; let sent = 0; let pending = 0; let producing = true; const seqs = {};
const producer = (async () => {
  const t0 = Date.now();
  while (producing) {
    const due = Math.floor(((Date.now() - t0) / 1000) * RATE);
    while (sent < due && pending < 20000) {
      const q = queues[sent % 8]; const id = Math.floor(sent / 8) % 5; const k = `${q}:${id}`; const s = (seqs[k] = (seqs[k] ?? -1) + 1); sent++; pending++;
      prod.send(`${q}/v1/${id}`, { id, seq: s }).then(() => ok.add(`${q}|${id}:${s}`), (e) => { fails[e.code] = (fails[e.code] ?? 0) + 1; }).finally(() => pending--);
    }
    await sleep(10);
  }
})();
await sleep(5000);
const tKill = Date.now();
const gapsIn = (from, to) => { const ts = deliveriesB.filter((t) => t >= from && t <= to); let g = 0; for (let i = 1; i < ts.length; i++) g = Math.max(g, ts[i] - ts[i - 1]); return { n: ts.length, maxGap: g }; };
const before = gapsIn(tKill - 4000, tKill);
await kill9(ma); console.log(`kill -9 ${ma.id} (a's master); ${load()}`);
const na = await waitMaster(nodes, 'a', 30000).catch(() => null);
console.log(`new a master ${na?.id} after ${Date.now() - tKill} ms`);
await sleep(Math.max(0, 8000 - (Date.now() - tKill)));
const after = gapsIn(tKill, Date.now());
producing = false; await producer;
const end = Date.now() + 90000;
while (pending > 0 && Date.now() < end) await sleep(100);
const missing = () => [...ok].filter((k) => { const [q, r] = k.split('|'); return !tr[q].seen.has(r); });
while (missing().length && Date.now() < end) await sleep(250);
const lost = missing(); const lostA = lost.filter((k) => k[1] === 'a').length, lostB = lost.length - lostA;
const dups = Object.fromEntries(queues.map((q) => [q, tr[q].dups])); const breaks = queues.reduce((s, q) => s + tr[q].breaks, 0);
const res = { sent, answeredOk: ok.size, sendFailures: fails, lostA, lostB, dups, orderBreaks: breaks, bBeforeKill: before, bAfterKill8s: after, load: load() };
console.log(JSON.stringify(res));
const broken = [];
if (lost.length) broken.push(`lost a ${lostA} b ${lostB}`);
if (after.maxGap > Math.max(1000, 3 * before.maxGap)) broken.push(`set b paused ${after.maxGap} ms after the kill (before: ${before.maxGap} ms)`);
console.log(broken.length ? `BROKEN: ${broken.join('; ')}` : 'HELD');
process.exit(broken.length ? 1 : 0);
