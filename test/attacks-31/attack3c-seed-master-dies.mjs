// Attack 3c: a client given ONE broker, set b's master, uses a queue on set b (and one on set a);
// that master is killed -9. Does the client go on with set b's new master (the map names it)?
// Promise: client.md "Clusters" (a single broker is enough to use every queue), SPEC §13/§9
// (inside a set everything to every broker of the set; failover: nothing lost).
// Usage: nice -n 10 node test/attacks-31/attack3c-seed-master-dies.mjs
import { startEtcd, startCluster, mkClient, sleep, load, waitMaster, kill9 } from './lib.mjs';

const etcd = await startEtcd(); await etcd.start();
const nodes = await startCluster(etcd.url, { a: ['a1', 'a2'], b: ['b1', 'b2'] }, () => ({ channels: { 'own/v1': { set: 'b' }, 'other/v1': { set: 'a' } } }));
await waitMaster(nodes, 'a'); const mb = await waitMaster(nodes, 'b');
const mq = await mkClient('c', [mb.spec], { sendTimeout: 15000 });
const got = { own: new Set(), other: new Set() };
for (const q of ['own', 'other']) await mq.consume(`${q}/v1/*`, (err, m, done) => { if (!err) { got[q].add(m.n); done(); } }).ready;
const ok = { own: new Set(), other: new Set() }; const fails = {}; let n = 0; let run = true;
const prod = (async () => { while (run) { for (const q of ['own', 'other']) { const k = n++; mq.send(`${q}/v1/x`, { n: k }).then(() => ok[q].add(k), (e) => { const c = `${q}:${e.code}`; fails[c] = (fails[c] ?? 0) + 1; }); } await sleep(20); } })();
await sleep(3000);
const tk = Date.now(); await kill9(mb); console.log(`kill -9 ${mb.id} (b's master, the client's only host); ${load()}`);
const nb = await waitMaster(nodes, 'b', 30000).catch(() => null); console.log(`new b master ${nb?.id} after ${Date.now() - tk} ms`);
await sleep(8000); run = false; await prod; await sleep(17000);
const lost = (q) => [...ok[q]].filter((k) => !got[q].has(k)).length;
const res = { sentPerQueue: Math.ceil(n / 2), okOwn: ok.own.size, okOther: ok.other.size, lostOwn: lost('own'), lostOther: lost('other'), sendFailures: fails, load: load() };
console.log(JSON.stringify(res));
const broken = [];
if (res.lostOwn || res.lostOther) broken.push('answered sends lost');
if (fails['own:E_NO_MASTER']) broken.push(`${fails['own:E_NO_MASTER']} sends to set b's queue E_NO_MASTER after its failover`);
console.log(broken.length ? `BROKEN: ${broken.join('; ')}` : 'HELD');
process.exit(broken.length ? 1 : 0);
