/* eslint-disable no-undef, no-empty, @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27): Node 20 global fetch, best-effort cleanup, figures kept for reading */
// Issue 27 item 1 (variant the nemesis found): kill -9 the master and restart it cut off from etcd (a TCP proxy per
// broker to etcd, cut), under traffic with a listener. Never two brokers reporting master (/health, whisker_role),
// the restarted one a slave until it holds the lease; listener gets each message once (client dedupe off), none lost.
import { makeNodes, start, kill9, writeConfig, health, metrics, metric, mkClient, keyPair, sleep, port, check, finish, startEtcdAt, waitFor, proxy } from './harness.mjs';
const REPS = Number(process.env.REPS ?? 3);
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const nodes = await makeNodes(['a', 'b', 'c'], { heartbeatTimeout: 2 });
for (const n of nodes) { n.px = await proxy(etcd.cport); n.config.election = { etcd: { hosts: [`http://127.0.0.1:${n.px.port}`] }, prefix: '/atk27/a1b-' + process.pid, leaseTtl: 2 }; writeConfig(n); }
await Promise.all(nodes.map(start));
const samples = []; let sampling = true;
const sampler = (async () => { while (sampling) { const ts = Date.now(); const r = {}; await Promise.all(nodes.map(async (n) => { const [h, m] = await Promise.all([health(n), metrics(n)]); r[n.id] = { role: h.body?.role, wr: metric(m, 'whisker_role') }; })); samples.push({ ts, t: Date.now(), r }); await sleep(50); } })();
const masterNow = () => { const s = samples.at(-1); return s && nodes.find((n) => s.r[n.id]?.role === 'master'); };
await waitFor(() => masterNow(), 60000);
const lst = await mkClient(nodes, 'lst1b', keyPair(), { dedupeWindow: 0 });
const got = new Map(); const h = lst.listen('el/v1/1', (e, m) => { if (!e) got.set(m.s, (got.get(m.s) ?? 0) + 1); }); await h.ready;
const prod = await mkClient(nodes, 'prod1b', keyPair(), { sendTimeout: 60000 });
let s = 0, run = true; const res = new Map();
const producer = (async () => { while (run) { const k = s++; prod.send('el/v1/1', { s: k }).then(() => res.set(k, 'OK'), (e) => res.set(k, e.code)); await sleep(10); } })();
const rounds = [];
for (let rep = 0; rep < REPS; rep++) {
  await waitFor(() => masterNow(), 30000); await sleep(2000);
  const m = masterNow(); const t0 = Date.now();
  m.px.cut(); await kill9(m); const tk = Date.now(); await sleep(500); await start(m); const tStarted = Date.now();
  await sleep(5000); m.px.heal();
  await sleep(6000);
  const win = samples.filter((x) => x.ts >= tk);
  const two = win.filter((x) => Object.values(x.r).filter((v) => v.role === 'master' || v.wr === 1).length > 1);
  const restartedMaster = win.filter((x) => x.t < tk + 5000 && (x.r[m.id]?.role === 'master' || x.r[m.id]?.wr === 1));
  const fmt = (x) => `+${x.ts - tk}ms ` + Object.entries(x.r).map(([k, v]) => `${k}:${v.role ?? '-'}/${v.wr ?? '-'}`).join(' ');
  rounds.push({ victim: m.id, restartAnsweringAfterKillMs: tStarted - tk, twoMasterSamples: two.length, twoEx: two.slice(0, 4).map(fmt), restartedSaidMasterWhileCut: restartedMaster.length, cutEx: restartedMaster.slice(0, 3).map(fmt), newMaster: masterNow()?.id });
}
run = false; await producer;
await waitFor(() => res.size >= s, 60000); await sleep(4000);
sampling = false; await sampler;
const okS = [...res].filter(([, v]) => v === 'OK').map(([k]) => k);
const lost = okS.filter((k) => !got.has(k)).length; const twice = [...got.values()].filter((v) => v > 1).length;
check(`1j master kill -9 and restarted cut off from etcd (${REPS}x): never two masters, restarted one never master while cut`, rounds.every((r) => r.twoMasterSamples === 0 && r.restartedSaidMasterWhileCut === 0), rounds);
check('1k listener (dedupe off): 0 lost of OK sends; twice at most the in-flight window', lost === 0 && twice <= 10 * REPS, { sent: s, ok: okS.length, lost, twice });
await lst.disconnect(); await prod.disconnect();
await finish(0);
