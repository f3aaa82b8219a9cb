/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// Scenario 1: three brokers a, b, c with an election block (leaseTtl 2) whose etcd address has nothing listening, each with
// "isMaster": true in its file. For DOWN ms (default 8000): /health and whisker_role of every broker sampled every 100 ms
// (never master, 503 degraded, reason naming etcd, election.phase etcd-unreachable); a producer sends a message every
// 100 ms (sendTimeout 2.5 s): each answered E_NO_MASTER with storedBy; a listener and a consumer (prefetch 10) get nothing.
// Then etcd is started on that address: exactly one master at every sample (never two), each send made after answered OK,
// and every accepted send (OK or E_NO_MASTER with storedBy) delivered once to the listener and once to the consumer.
// Promises: issue 27 items 1-2, SPEC §9, operations.md#automatic-failover "etcd unreachable", management.md /health reasons.
import { makeNodes, start, kill9, sleep, port, finish, startEtcdAt, electionBlock, waitFor, writeConfig, health, metrics, metric, mkClient, keyPair, check,
  up, masterOf, roles, sampler, accepted } from './common.mjs';
const DOWN = Number(process.env.DOWN ?? 8000);
console.log('start', new Date().toISOString(), up(), { DOWN });
const etcd = await startEtcdAt(await port(), await port());
const CH = 'g1/v1/x';
const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(etcd.url, '/atk27g/g1-' + process.pid, 2), heartbeatTimeout: 2, logLevel: 'info' });
for (const n of nodes) { n.config.isMaster = true; writeConfig(n); }
// sample from each broker's first answer
const early = { masters: 0, samples: 0, bad: [] };
let sampling = true;
const earlyLoop = (async () => {
  while (sampling) {
    for (const n of nodes) {
      if (!n.proc) continue;
      const h = await health(n); if (!h.status) continue;
      const m = await metrics(n);
      early.samples++;
      const b = h.body ?? {};
      const ok = (h.status === 503 && b.status === 'starting' && b.role !== 'master') || h.status === 503 && b.status === 'degraded' && b.role !== 'master' && /etcd/.test(b.reason ?? '') && metric(m, 'whisker_role') !== 1;
      if (b.role === 'master' || metric(m, 'whisker_role') === 1) early.masters++;
      if (!ok && early.bad.length < 5) early.bad.push({ id: n.id, status: h.status, st: b.status, role: b.role, reason: b.reason, phase: b.election?.phase, whisker_role: metric(m, 'whisker_role') });
      if (/unreachable/.test(b.election?.phase ?? '')) early.phaseSeen = (early.phaseSeen ?? 0) + 1;
      early.reasons = early.reasons ?? new Set(); early.reasons.add(b.reason);
    }
    await sleep(100);
  }
})();
await Promise.all(nodes.map(start));
// clients: a producer, a listener, a consumer (not awaiting ready: there is no master to register them)
const P = await mkClient(nodes, `p-${process.pid}`, keyPair(), { sendTimeout: 2500 });
const L = await mkClient(nodes, `l-${process.pid}`, keyPair());
const C = await mkClient(nodes, `c-${process.pid}`, keyPair());
const lGot = new Map(); const cGot = new Map(); const deliveredDown = [];
let phase = 'down';
L.listen(CH, (err, m) => { if (err || !m) return; lGot.set(m.n, (lGot.get(m.n) ?? 0) + 1); if (phase === 'down') deliveredDown.push('L' + m.n); }).ready.catch(() => {});
C.consume(CH, { prefetch: 10 }, (err, m, done) => { if (err) return; cGot.set(m.n, (cGot.get(m.n) ?? 0) + 1); if (phase === 'down') deliveredDown.push('C' + m.n); done(); }).ready?.catch(() => {});
const res = []; const pend = [];
let n = 0; let sending = true;
const sendLoop = (async () => { while (sending) { const j = n++; pend.push(new Promise((r) => P.send(CH, { n: j }, (err) => { res[j] = err ? `${err.code}:${(err.info?.storedBy ?? []).slice().sort().join('')}` : 'OK'; r(); }))); await sleep(100); } })();
await sleep(DOWN);
const downSends = n;
sampling = false; await earlyLoop;
const rolesDown = await roles(nodes);
const hb = (await health(nodes[1])).body;
check(`g1 etcd unreachable at start: no broker master (health role / whisker_role) at any of ${early.samples} samples from each broker's first answer, every /health 503 degraded naming etcd (or 503 starting, documented)`,
  early.masters === 0 && early.bad.length === 0, { masters: early.masters, bad: early.bad, phaseUnreachableSamples: early.phaseSeen, reasons: [...(early.reasons ?? [])].slice(0, 4), rolesDown, bHealth: { reason: hb?.reason, phase: hb?.election?.phase } });
// etcd comes up: sample masters every 100 ms
phase = 'up';
const s = sampler(nodes, 100);
const tb = Date.now(); await etcd.start();
const m1 = await waitFor(() => masterOf(nodes), 30000, 100); const tm = Date.now() - tb;
await sleep(4000);
sending = false; await sendLoop; await Promise.all(pend);
const answersDown = res.slice(0, downSends); const answersUp = res.slice(downSends);
const tallyOf = (a) => { const t = {}; for (const x of a) t[x] = (t[x] ?? 0) + 1; return t; };
// sends made before the master's election may end E_NO_MASTER (sendTimeout 2.5 s); those made after it must be OK
check(`g1 etcd down ${DOWN} ms: nothing delivered while down, sends answered E_NO_MASTER with storedBy`, deliveredDown.length === 0 && answersDown.slice(0, Math.max(0, downSends - 30)).every((x) => /^E_NO_MASTER:.+/.test(x)),
  { deliveredDown: deliveredDown.slice(0, 10), answersDown: tallyOf(answersDown) });
await sleep(3000);
const s2 = await s.stop();
const wantAll = res.map((x, j) => [x, j]).filter(([x]) => accepted(x)).map(([, j]) => j);
const t0 = Date.now(); while (Date.now() - t0 < 20000 && !wantAll.every((j) => lGot.has(j) && cGot.has(j))) await sleep(250);
await sleep(1500);
const lMiss = wantAll.filter((j) => !lGot.has(j)); const cMiss = wantAll.filter((j) => !cGot.has(j));
const lTwice = [...lGot].filter(([, k]) => k > 1).length; const cTwice = [...cGot].filter(([, k]) => k > 1).length;
const afterElection = res.slice(downSends + Math.ceil(tm / 100) + 5);
check(`g1 etcd up: exactly one master (${s2.samples} samples of /health + whisker_role, never two), ${m1?.id} elected ${tm} ms after etcd started; every accepted send delivered once to listener and consumer; sends after the election OK`,
  !!m1 && s2.maxMasters === 1 && lMiss.length === 0 && cMiss.length === 0 && lTwice === 0 && cTwice === 0 && afterElection.every((x) => x === 'OK'),
  { maxMasters: s2.maxMasters, twoMasters: s2.twoMasters.slice(0, 5), answersUp: tallyOf(answersUp), accepted: wantAll.length, lMiss: lMiss.length, cMiss: cMiss.length, lTwice, cTwice, notOkAfterElection: afterElection.filter((x) => x !== 'OK').length, rolesEnd: await roles(nodes), load: up() });
// RESTARTS (default 3): a slave killed -9 and restarted with etcd up, its /health and /metrics read every 20 ms from its
// first answer for 3 s: never master (issue 27 item 1: "every restarted broker says master for ~50 ms")
const rr = { answers: 0, master: 0, ex: [] };
for (let k = 0; k < Number(process.env.RESTARTS ?? 3); k++) {
  const M = await masterOf(nodes); const S = nodes.find((x) => x !== M);
  await kill9(S); let on = true;
  const loop = (async () => { let t1 = null; while (on) { const [h, m] = await Promise.all([health(S), metrics(S)]); if (h.status) { t1 ??= Date.now(); rr.answers++; if (h.body?.role === 'master' || metric(m, 'whisker_role') === 1) { rr.master++; if (rr.ex.length < 3) rr.ex.push({ id: S.id, st: h.body?.status, role: h.body?.role, wr: metric(m, 'whisker_role') }); } if (Date.now() - t1 > 3000) break; } await sleep(20); } })();
  await start(S); await loop; on = false;
}
check(`g1 restarts with etcd up: a slave killed -9 and restarted ${process.env.RESTARTS ?? 3} times, never master from its first answer`, rr.master === 0, rr);
await finish(0);
