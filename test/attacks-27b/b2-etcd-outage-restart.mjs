 
// Issue 27 items 1-2 under traffic. Docs (operations.md#automatic-failover): "a broker is a slave from its first second
// until it holds the lease, whether etcd is up, slow or unreachable at start"; "etcd unreachable: the master steps down
// within leaseTtl / 2; ... no broker delivers"; /health 503 degraded naming etcd; "Sends keep being stored by every
// broker and are answered E_NO_MASTER with info.storedBy ... nothing is lost".
// Election cluster a,b,c (leaseTtl 2), retained channel, 2 producers pipelining, one listener. etcd killed -9; 1.5 s
// later the master killed -9 and restarted (etcd still down), a slave killed -9 and restarted too; etcd back after
// OUTAGE s. Sampled every ~30 ms: /health role of each broker, deliveries. Checks: nothing delivered and no `master`
// from leaseTtl/2 + 0.3 s after the etcd kill until etcd is back; then one master; every send OK or stored delivered,
// none twice beyond the in-flight window; replay from every broker holds every OK send once, in send order per producer.
import { makeNodes, start, kill9, health, mkClient, keyPair, sleep, port, check, finish, startEtcdAt, electionBlock, waitFor } from './harness.mjs';
import { execFileSync } from 'node:child_process';
const OUTAGE = Number(process.env.OUTAGE ?? 12);
const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up());
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const CH = 'ro/v1/x';
const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(etcd.url, '/atk27b/b2-' + process.pid, 2), heartbeatTimeout: 2,
  logLevel: 'info', channels: { 'ro/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 100000 } } });
await Promise.all(nodes.map(start));
const master = async () => { for (const n of nodes) if (n.proc.exitCode === null && (await health(n)).body?.role === 'master') return n; return null; };
await waitFor(master, 60000, 200);
const T0 = Date.now();
const lst = await mkClient(nodes, 'lst-b2', keyPair(), { sendTimeout: 30000 });
const dl = []; const hl = lst.listen(CH, (err, msg) => { if (!err && msg) dl.push({ t: Date.now() - T0, key: `${msg.k}:${msg.i}` }); }); await hl.ready;
const prods = [await mkClient(nodes, 'p-b2-0', keyPair(), { sendTimeout: 30000 }), await mkClient(nodes, 'p-b2-1', keyPair(), { sendTimeout: 30000 })];
const res = [[], []]; let run = true; const pend = [];
const loops = prods.map((p, k) => (async () => { let i = 0; while (run) { for (let b = 0; b < 2; b++) { const j = i++;
  pend.push(new Promise((r) => p.send(CH, { k, i: j }, (err) => { res[k][j] = err ? `${err.code}:${(err.info?.storedBy ?? []).length ? 'stored' : 'unstored'}` : 'OK'; r(); }))); } await sleep(20); } })());
const roles = []; let sampling = true;
const sampler = (async () => { while (sampling) { const r = {}; await Promise.all(nodes.map(async (n) => { const h = await health(n); r[n.id] = h.status ? `${h.body?.role}/${h.status}` : 'down'; })); roles.push({ t: Date.now() - T0, r }); await sleep(30); } })();
await sleep(3000);
const m = await master(); const s = nodes.find((n) => n !== m);
const tKill = Date.now() - T0; await etcd.stop(); console.log(`t+${tKill} etcd killed; master ${m.id}`);
await sleep(1500); await kill9(m); await sleep(500); await start(m); console.log(`t+${Date.now() - T0} ${m.id} (old master) restarted with etcd down`);
await kill9(s); await sleep(300); await start(s); console.log(`t+${Date.now() - T0} ${s.id} (slave) restarted with etcd down`);
await sleep(Math.max(0, tKill + OUTAGE * 1000 - (Date.now() - T0)));
const tBack = Date.now() - T0; await etcd.start(); console.log(`t+${tBack} etcd back`);
const one = await waitFor(master, 30000, 100); const tMaster = Date.now() - T0;
await sleep(4000); run = false; await Promise.all(loops); await Promise.all(pend); await sleep(3000);
sampling = false; await sampler;
const win = [tKill + 1300, tBack];
const mastersIn = roles.filter((x) => x.t > win[0] && x.t < win[1] && Object.values(x.r).some((v) => v.startsWith('master')));
const dlIn = dl.filter((x) => x.t > win[0] + 300 && x.t < win[1]);
const two = roles.filter((x) => Object.values(x.r).filter((v) => v.startsWith('master')).length > 1);
const tally = {}; const okKeys = new Set(), storedKeys = new Set();
res.forEach((rs, k) => rs.forEach((v, i) => { tally[v] = (tally[v] ?? 0) + 1; if (v === 'OK') okKeys.add(`${k}:${i}`); if (v && v.endsWith(':stored')) storedKeys.add(`${k}:${i}`); }));
const cnt = new Map(); for (const x of dl) cnt.set(x.key, (cnt.get(x.key) ?? 0) + 1);
const lost = [...okKeys].filter((k) => !cnt.has(k)).length, storedLost = [...storedKeys].filter((k) => !cnt.has(k)).length, twice = [...cnt.values()].filter((v) => v > 1).length;
console.log('roles during outage (first/last sample in window):', JSON.stringify(roles.find((x) => x.t > win[0])), JSON.stringify(roles.filter((x) => x.t < win[1]).at(-1)), up());
check('b2 no broker says master from leaseTtl/2+0.3 s after the etcd kill until etcd is back (old master restarted meanwhile)', mastersIn.length === 0, { window: win, samples: roles.filter((x) => x.t > win[0] && x.t < win[1]).length, master: mastersIn.length, ex: mastersIn[0] });
check('b2 nothing delivered while etcd is down', dlIn.length === 0, { delivered: dlIn.length, ex: dlIn.slice(0, 3) });
check('b2 never two brokers say master', two.length === 0, { two: two.length, ex: two[0] });
check('b2 etcd back: a master, every OK and every stored send delivered, none twice', !!one && lost === 0 && storedLost === 0 && twice === 0, { masterAfterMs: tMaster - tBack, answers: tally, lostOk: lost, lostStored: storedLost, twice });
for (const n of nodes) {
  const c = await mkClient([n], 'rp-b2-' + n.id, keyPair(), { sendTimeout: 20000 }); const seq = []; try { for await (const x of c.replay(CH, {})) seq.push(`${x.data.k}:${x.data.i}`); } catch (e) { seq.err = e.code; } await c.disconnect();
  const sc = new Map(); for (const x of seq) sc.set(x, (sc.get(x) ?? 0) + 1); const last = {}; let brk = 0;
  for (const x of seq) { if (!okKeys.has(x)) continue; const [k, i] = x.split(':').map(Number); if (last[k] !== undefined && i < last[k]) brk++; last[k] = Math.max(last[k] ?? -1, i); }
  check(`b2 replay from ${n.id}: every OK send once, in send order per producer`, !seq.err && [...okKeys].every((k) => sc.get(k) === 1) && brk === 0, { records: seq.length, missingOk: [...okKeys].filter((k) => !sc.has(k)).length, twice: [...sc.values()].filter((v) => v > 1).length, breaks: brk, err: seq.err });
}
for (const p of [...prods, lst]) await p.disconnect();
await finish(0);
