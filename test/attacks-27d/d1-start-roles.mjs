// Issue 27 item 1 from new angles. Docs: operations.md#automatic-failover ("a broker is a slave from its first second until
// it holds the lease, whether etcd is up, slow or unreachable at start. Until then it settles no send and delivers
// nothing"), SPEC §9; "without an election block nothing changes".
// 1. etcd SLOW, not refused: election.etcd.hosts points at a TCP server that accepts and never answers (a black hole);
//    three brokers with isMaster true in each file; /health sampled every 25 ms from before the start, whisker_role from
//    /metrics, a listener and a consumer on all three, a producer every 10 ms (sendTimeout 2 s), for SLOW_MS.
// 2. etcd up, three brokers elected; RESTARTS times: kill -9 a slave and restart it at once, then the MASTER and restart
//    it at once (its lease still alive in etcd): the restarted broker's /health sampled every 10 ms from its spawn; a
//    listener connected to that broker ALONE must get nothing until the log says it was elected.
// 3. no election block, isMaster true: the first /health answer already says master (nothing changes).
import { makeNodes, start, kill9, health, metrics, metric, mkClient, keyPair, sleep, port, check, finish, startEtcd, electionBlock, waitFor, writeConfig } from './harness.mjs';
import { execFileSync } from 'node:child_process';
import net from 'node:net';

const SLOW_MS = Number(process.env.SLOW_MS ?? 8000), RESTARTS = Number(process.env.RESTARTS ?? 2);
const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up(), { SLOW_MS, RESTARTS });
const CH = 'jobs/v1/x';

// 1. black-hole etcd
const held = []; const hole = net.createServer((s) => { held.push(s); s.on('error', () => {}); });
const holePort = await port(); await new Promise((r) => hole.listen(holePort, '127.0.0.1', r));
{
  const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(`http://127.0.0.1:${holePort}`, '/atk27d/d1', 2), logLevel: 'info' });
  for (const n of nodes) { n.config.isMaster = true; writeConfig(n); }
  const samples = []; let sampling = true;
  const sampler = (async () => { while (sampling) { const hs = await Promise.all(nodes.map(health)); samples.push(hs.map((h) => `${h.status}/${h.body?.role ?? '-'}/${h.body?.election?.phase ?? h.body?.phase ?? '-'}/${(h.body?.reason ?? '').slice(0, 60)}`)); await sleep(25); } })();
  await Promise.all(nodes.map(start));
  const got = []; const L = await mkClient(nodes, 'd1-l', keyPair(), { connectTimeout: 3000 });
  L.listen(CH, (err, m) => { if (!err && m) got.push(m); }).ready.catch(() => {});
  const C = await mkClient(nodes, 'd1-c', keyPair(), { connectTimeout: 3000 });
  C.consume(CH, (err, m, done) => { if (!err && m) { got.push(m); done(); } }).ready.catch(() => {});
  const P = await mkClient(nodes, 'd1-p', keyPair(), { sendTimeout: 2000, connectTimeout: 3000 });
  const ans = {}; const pend = []; const t0 = Date.now();
  while (Date.now() - t0 < SLOW_MS) { pend.push(new Promise((r) => P.send(CH, { i: 1 }, (err) => { const k = err ? `${err.code}:${(err.info?.storedBy ?? []).length}` : 'OK'; ans[k] = (ans[k] ?? 0) + 1; r(); }))); await sleep(10); }
  await Promise.all(pend);
  const roleMetric = []; for (const n of nodes) roleMetric.push(metric(await metrics(n), 'whisker_role'));
  sampling = false; await sampler;
  const masters = samples.filter((s) => s.some((x) => x.includes('/master/'))).length;
  const kinds = {}; for (const s of samples) for (const x of s) kinds[x] = (kinds[x] ?? 0) + 1;
  const conflictLines = nodes.map((n) => (n.log.match(/two masters|conflict/gi) ?? []).length).reduce((x, y) => x + y, 0);
  check('d1.1 etcd a black hole (accepts, never answers) at start, isMaster true in every file: no broker says master, nothing delivered, no send OK',
    masters === 0 && got.length === 0 && !ans.OK && roleMetric.every((v) => !v),
    { samples: samples.length, mastersInSamples: masters, healthKinds: kinds, whisker_role: roleMetric, delivered: got.length, answers: ans, conflictLines });
  await P.disconnect(); await C.disconnect(); await L.disconnect();
  for (const n of nodes) await kill9(n);
}
for (const s of held) s.destroy(); hole.close();

// 2. restarts with etcd up
{
  const etcd = await startEtcd();
  const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(etcd.url, '/atk27d/d1b-' + process.pid, 2), heartbeatTimeout: 2, logLevel: 'info' });
  for (const n of nodes) { n.config.isMaster = true; writeConfig(n); }
  await Promise.all(nodes.map(start));
  const masterOf = async () => { for (const n of nodes) if ((await health(n)).body?.role === 'master') return n; return null; };
  await waitFor(masterOf, 30000, 100);
  const P = await mkClient(nodes, 'd1b-p', keyPair(), { sendTimeout: 5000 });
  let run = true; const pend = [];
  const loop = (async () => { let i = 0; while (run) { pend.push(P.send(CH, { i: i++ }).catch(() => {})); await sleep(10); } })();
  const results = [];
  for (let r = 0; r < RESTARTS; r++) {
    for (const which of ['slave', 'master']) {
      const m = await waitFor(masterOf, 30000, 100);
      const victim = which === 'master' ? m : nodes.find((n) => n !== m);
      await kill9(victim);
      const logStart = victim.log.length;
      const samples = []; let sampling = true; const tSpawn = Date.now();
      const sampler = (async () => { while (sampling) { const h = await health(victim); if (h.status) samples.push({ t: Date.now(), role: h.body?.role, epoch: h.body?.election?.epoch ?? h.body?.epoch }); await sleep(10); } })();
      await start(victim);
      const got = []; const L = await mkClient([victim], `d1b-l-${r}-${which}`, keyPair(), { connectTimeout: 3000 });
      L.listen(CH, (err, msg) => { if (!err && msg) got.push(Date.now()); }).ready.catch(() => {});
      await sleep(which === 'master' ? 6000 : 3000);
      sampling = false; await sampler;
      const l = victim.log.slice(logStart);
      const el = (l.match(/[^\n]*elected master through etcd[^\n]*/) ?? [])[0];
      const tEl = el ? Date.parse((el.match(/"time":"([^"]*)"/) ?? [])[1]) : Infinity;
      const early = samples.filter((s) => s.role === 'master' && s.t < tEl - 50);
      const earlyDel = got.filter((t) => t < tEl).length;
      results.push({ r, which, id: victim.id, samples: samples.length, firstRole: samples[0]?.role, masterBeforeElected: early.length, deliveredToItBeforeElected: earlyDel, electedMsAfterSpawn: Number.isFinite(tEl) ? tEl - tSpawn : null, delivered: got.length });
      await L.disconnect();
    }
  }
  run = false; await loop; await Promise.all(pend);
  check('d1.2 a broker restarted (kill -9) with etcd up, slave or master with its old lease alive: never says master before its "elected" line, delivers nothing before it',
    results.every((x) => x.masterBeforeElected === 0 && x.deliveredToItBeforeElected === 0 && x.samples > 0), results);
  await P.disconnect();
  for (const n of nodes) await kill9(n);
  await etcd.stop();
}

// 3. no election block
{
  const [n] = await makeNodes(['solo']);
  const samples = []; let sampling = true;
  const sampler = (async () => { while (sampling) { const h = await health(n); if (h.status) samples.push(`${h.status}/${h.body?.role ?? h.body?.status}`); await sleep(10); } })();
  await start(n); await sleep(1000); sampling = false; await sampler;
  const c = await mkClient([n], 'd1c', keyPair()); const r = await c.send(CH, { i: 1 }).then(() => 'OK', (e) => e.code); await c.disconnect();
  // management.md: 503 {"status":"starting"} while the store opens, then 200 with its role
check('d1.3 no election block, isMaster true: master from its first /health answer with a role (503 starting before), a send OK', samples.some((s) => s === '200/master') && samples.every((s) => s === '200/master' || s === '503/starting') && r === 'OK', { first: samples[0], kinds: [...new Set(samples)], send: r });
}
console.log(up());
await finish(0);
