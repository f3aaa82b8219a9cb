/* eslint-disable no-undef, no-empty, @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27): Node 20 global fetch, best-effort cleanup, figures kept for reading */
// Issue 27 item 1: election block + etcd unreachable at start -> no broker acts as master; then etcd up -> one master,
// each message once; restarted brokers never report master while another holds the lease. Without election: unchanged.
import { makeNodes, start, kill9, health, metrics, metric, mkClient, keyPair, sleep, port, check, finish, startEtcdAt, electionBlock, waitFor } from './harness.mjs';
import { execFileSync } from 'node:child_process';

const cport = await port(), pport = await port();
const etcd = await startEtcdAt(cport, pport);
const prefix = '/atk27/a1-' + process.pid;
const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(etcd.url, prefix, 2), heartbeatTimeout: 2 });
for (const n of nodes) { n.config.isMaster = true; (await import('./harness.mjs')).writeConfig(n); }
const masterSamples = []; // {t, roles}
let sampling = true;
const sampler = (async () => {
  while (sampling) {
    const roles = {};
    await Promise.all(nodes.map(async (n) => { const h = await health(n); const m = await metrics(n); roles[n.id] = { st: h.status, role: h.body?.role, phase: h.body?.election?.phase, reason: h.body?.reason, wr: metric(m, 'whisker_role') }; }));
    masterSamples.push({ t: Date.now(), roles });
    await sleep(50);
  }
})();
await Promise.all(nodes.map(start));
await sleep(3000);
const down = masterSamples.filter((s) => Object.values(s.roles).some((r) => r.role === 'master' || r.wr === 1));
check('1a no broker says master (health role / whisker_role) while etcd unreachable at start', down.length === 0,
  { samples: masterSamples.length, withMaster: down.length, example: down[0]?.roles ?? masterSamples.at(-1)?.roles });
const key = keyPair();
const lst = await mkClient(nodes, 'lst', key, { sendTimeout: 3000 });
const got = new Map();
const h = lst.listen('t/v1/x', (err, msg, info) => { if (!err) got.set(info.messageId, (got.get(info.messageId) ?? 0) + 1); });
const prod = await mkClient(nodes, 'prod', keyPair(), { sendTimeout: 3000 });
const results = await Promise.all([0, 1, 2, 3, 4].map((i) => new Promise((r) => prod.send('t/v1/x', { i }, (err, _n, info) => r({ code: err?.code ?? 'OK', storedBy: err?.info?.storedBy ?? info?.storedBy ?? err?.details?.storedBy, id: info?.messageId ?? err?.info?.messageId })))));
await sleep(500);
check('1b sends not settled while etcd unreachable (E_NO_MASTER with storedBy a,b,c)', results.every((r) => r.code === 'E_NO_MASTER' && (r.storedBy ?? []).length === 3), results.map((r) => `${r.code}:${(r.storedBy ?? []).join('')}`).join(' '));
check('1c nothing delivered while etcd unreachable', got.size === 0, { delivered: got.size });
// etcd up
const tUp = Date.now();
await etcd.start();
const one = await waitFor(async () => { const s = masterSamples.at(-1); return Object.values(s.roles).filter((r) => r.role === 'master').length === 1 && s.t > tUp + 500; }, 20000);
await sleep(3000);
const after = masterSamples.filter((s) => s.t > tUp);
const two = after.filter((s) => Object.values(s.roles).filter((r) => r.role === 'master' || r.wr === 1).length > 1);
const masterAt = after.find((s) => Object.values(s.roles).some((r) => r.role === 'master'));
check('1d etcd up: exactly one master, never two', !!one && two.length === 0, { firstMasterAfterMs: masterAt ? masterAt.t - tUp : null, twoMasterSamples: two.length, last: Object.entries(masterSamples.at(-1).roles).map(([k, r]) => `${k}:${r.role}/${r.st}`).join(' ') });
const twice = [...got.values()].filter((v) => v > 1).length;
check('1e each message stored at start delivered exactly once after etcd up', got.size === 5 && twice === 0, { delivered: got.size, twice });
// restart slaves and the master with etcd up: a restarted broker never says master while another holds it
const restartBad = [];
for (let round = 0; round < 4; round++) {
  await waitFor(() => Object.values(masterSamples.at(-1).roles).some((r) => r.role === 'master'), 15000);
  const s = masterSamples.at(-1);
  const masterId = Object.entries(s.roles).find(([, r]) => r.role === 'master')?.[0];
  const victim = round === 3 ? nodes.find((n) => n.id === masterId) : nodes.filter((n) => n.id !== masterId)[round % 2];
  const t0 = Date.now();
  await kill9(victim);
  await sleep(300);
  // poll /health and /metrics from the spawn on, so the very first answers count, until 3 s after it listens
  const seen = []; let up = false, tUp = 0;
  const st = start(victim).then(() => { up = true; tUp = Date.now(); });
  while (!up || Date.now() - tUp < 3000) {
    const [hh, mm] = await Promise.all([health(victim), metrics(victim)]);
    if (hh.status) seen.push({ t: Date.now() - t0, role: hh.body?.role, wr: metric(mm, 'whisker_role') });
    await sleep(10);
  }
  await st;
  const etcdMaster = '';
  const bad = seen.filter((x) => x.role === 'master' || x.wr === 1);
  restartBad.push({ victim: victim.id, wasMaster: victim.id === masterId, answers: seen.length, master: bad.length, firstMasterMs: bad[0]?.t, etcdMaster: etcdMaster.slice(0, 60) });
  await sleep(2500);
}
const slaveRestarts = restartBad.filter((r) => !r.wasMaster);
check('1f restarted slave (etcd up) never reports master', slaveRestarts.every((r) => r.master === 0), slaveRestarts);
const mr = restartBad.find((r) => r.wasMaster);
check('1g restarted old master (kill -9, lease still alive) reports master only after a real (re-)election [info]', true, mr);
const twoEver = masterSamples.filter((s) => Object.values(s.roles).filter((r) => r.role === 'master').length > 1);
check('1h never two brokers reporting master at once over the whole run', twoEver.length === 0, { samples: masterSamples.length, two: twoEver.length, ex: twoEver[0] && Object.entries(twoEver[0].roles).map(([k, r]) => `${k}:${r.role}`).join(' ') });
sampling = false; await sampler;
await lst.disconnect(); await prod.disconnect();
// Without an election block nothing changes: configured master delivers.
const plain = await makeNodes(['p1', 'p2']);
await Promise.all(plain.map(start));
const c2 = await mkClient(plain, 'lst2', keyPair());
let n2 = 0; const hh = c2.listen('t/v1/y', (e) => { if (!e) n2++; }); await hh.ready;
const r2 = await c2.send('t/v1/y', { ok: 1 }).then(() => 'OK', (e) => e.code);
await waitFor(() => n2 > 0, 5000);
const hp = await health(plain[0]);
check('1i without election block: configured master settles and delivers', r2 === 'OK' && n2 === 1 && hp.body?.role === 'master', { send: r2, delivered: n2, role: hp.body?.role });
await c2.disconnect();
await finish(0);
