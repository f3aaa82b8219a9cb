/* eslint-disable no-undef, no-empty, @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27): Node 20 global fetch, best-effort cleanup, figures kept for reading */
// Issue 27 item 2: /health while etcd is down: 503 degraded, reason naming etcd, election.phase etcd-unreachable;
// /health/live 200 (the probe operators are told to use for liveness/client traffic); metrics reachable 0, role 0.
// Both at start (etcd never up) and after an outage (etcd killed under an elected master).
import { makeNodes, start, health, metrics, metric, sleep, port, check, finish, startEtcdAt, electionBlock, waitFor } from './harness.mjs';
const cport = await port(), pport = await port();
const etcd = await startEtcdAt(cport, pport);
const nodes = await makeNodes(['a', 'b'], { election: electionBlock(etcd.url, '/atk27/a2-' + process.pid, 2), heartbeatTimeout: 2 });
await Promise.all(nodes.map(start));
async function view(n) {
  const h = await health(n); const m = await metrics(n);
  let live = 0; try { live = (await fetch(`http://127.0.0.1:${n.mport}/health/live`)).status; } catch {}
  return { st: h.status, status: h.body?.status, role: h.body?.role, phase: h.body?.election?.phase, reason: h.body?.reason, live, reach: metric(m, 'whisker_election_etcd_reachable'), wr: metric(m, 'whisker_role') };
}
await sleep(2500);
for (const [label, vs] of [['at start', await Promise.all(nodes.map(view))]]) {
  const ok = vs.every((v) => v.st === 503 && v.status === 'degraded' && /etcd/.test(v.reason ?? '') && v.phase === 'etcd-unreachable' && v.live === 200 && v.reach === 0 && v.wr === 0);
  check(`2a ${label}: /health 503 degraded naming etcd, phase etcd-unreachable, /health/live 200, reachable 0, role 0`, ok, vs);
}
await etcd.start();
const elected = await waitFor(async () => { const vs = await Promise.all(nodes.map(view)); return vs.filter((v) => v.role === 'master').length === 1 && vs.every((v) => v.st === 200) ? vs : null; }, 25000, 200);
check('2b etcd up: one master, both /health 200', !!elected, elected ?? (await Promise.all(nodes.map(view))));
await sleep(8000);
const later = await Promise.all(nodes.map(view));
check('2b2 8 s after election with etcd up: the slave no longer reports etcd unreachable (phase, whisker_election_etcd_reachable 1)', later.every((v) => v.phase !== 'etcd-unreachable' && v.reach === 1), later);
const tk = Date.now();
const masterNode = nodes[later.findIndex((v) => v.role === 'master')];
const trace = []; let tracing = true;
const tr = (async () => { while (tracing) { const [h, m] = await Promise.all([health(masterNode), metrics(masterNode)]); trace.push({ t: Date.now() - tk, role: h.body?.role, wr: metric(m, 'whisker_role'), reach: metric(m, 'whisker_election_etcd_reachable') }); await sleep(25); } })();
await etcd.stop();
const deg = await waitFor(async () => { const vs = await Promise.all(nodes.map(view)); return vs.every((v) => v.st === 503) ? vs : null; }, 10000, 100);
check('2c etcd killed: every broker 503 degraded naming etcd within a few s; live 200', !!deg && deg.every((v) => /etcd/.test(v.reason ?? '') && v.live === 200 && v.phase === 'etcd-unreachable' && v.wr === 0),
  { afterMs: Date.now() - tk, views: deg ?? (await Promise.all(nodes.map(view))) });
await sleep(3000); tracing = false; await tr;
const hSlave = trace.find((x) => x.role === 'slave')?.t, mSlave = trace.find((x) => x.wr === 0)?.t, mUnreach = trace.find((x) => x.reach === 0)?.t;
const lagging = trace.filter((x) => x.role === 'slave' && x.wr === 1);
check('2d [info: /metrics is a kept render, up to 10x its render time, docs/management.md] old master after etcd kill: samples where /health says slave and whisker_role still 1', true,
  { healthSlaveAtMs: hSlave, metricRole0AtMs: mSlave, metricUnreachableAtMs: mUnreach, disagreeingSamples: lagging.length, of: trace.length });
await finish(0);
