/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// atk27i scenario 2: replays asked again and again of whichever broker is master, during and right after elections caused
// by kill -9 or SIGSTOP (past the lease) of the master, while producers pipeline.
// Set: a, b, c + etcd (leaseTtl 2, heartbeatTimeout 2), a retained channel (retention.seconds 3600), a listener, P producers
// (default 4) each pipelining BURST (default 2) sends every GAP ms (default 2) to every broker (sendTimeout 1.5 s), each send's
// answer and answer time recorded. After WARM ms (default 4000), FAULTS (default "kill,stop,kill,stop") are done one after
// the other on the master of the moment: kill = kill -9, restarted RESTART ms later (default 2000); stop = SIGSTOP STOP ms
// (default 4000, past the 2 s lease), then SIGCONT; sync / syncstop = a slave killed -9 and restarted, then the master killed
// -9 (sync) or SIGSTOPped (syncstop) (the slave down SDOWN ms, default 6000) as soon as that slave is in step (SYNCWAIT=instep, default) or syncing (SYNCWAIT=sync), plus
// SYNCDELAY ms (default 0): the mirror just synced may be elected while applying its sync; GAPMS (default 6000) between faults.
// Meanwhile, every 200-500 ms (TICK=min,max), the brokers' /health is read (500 ms limit, in parallel); when exactly one says
// it is master, a replay is asked of it alone (a client connected to that broker only), `since` WINDOW ms back (default 8000),
// at most 3 under way per broker. Each replay is judged against the sends answered OK before it was asked (answer time <
// the ask time) and made after `since` + 200 ms (their acceptance is later than their making): every one of them in it, each
// producer's records in send order, nothing twice. Replays that failed (the broker went away) and replays of a broker no
// longer master when the replay ended are reported apart; E_NO_MASTER-with-storedBy sends a replay lacks are counted
// (missingStored) but not judged (docs: accepted only once the copy reaches a master).
// At the end: every broker in step, the listener has every accepted send, then each broker's whole history is replayed
// (20 s after the producers stopped) and compared with the master's, record for record.
// Promises: protocol.md#replay "A broker acting as master first applies the mirror frames it received before the replay was
// asked ..., then waits while it is catching up ...: its replay holds every send answered before it"; client.md#replay
// "Across a failover a promoted mirror replays the same history ... at once" (elected while catching up included);
// SPEC §7 (each connection's sends in the order sent); configuration.md#retention (every send answered OK once).
import { makeNodes, start, kill9, sleep, port, finish, startEtcdAt, electionBlock, waitFor, check, up, listener, analyse, bad,
  same, replayFrom, tally, alive, healthT, masterOfT, mkClient, keyPair, accepted } from './common.mjs';
import { timedProducers, keepData } from './common.mjs';
const P = Number(process.env.P ?? 4); const GAP = Number(process.env.GAP ?? 2); const BURST = Number(process.env.BURST ?? 2);
const WARM = Number(process.env.WARM ?? 4000); const FAULTS = (process.env.FAULTS ?? 'kill,stop,kill,stop').split(',');
const LEASE = Number(process.env.LEASE ?? 2); // the election's leaseTtl (atk27j); a SIGSTOP outlasts it by 2 s at least
const RESTART = Number(process.env.RESTART ?? 2000); const STOP = Number(process.env.STOP ?? Math.max(4000, LEASE * 1000 + 2000)); const GAPMS = Number(process.env.GAPMS ?? 6000);
const SYNCDELAY = Number(process.env.SYNCDELAY ?? 0); const SDOWN = Number(process.env.SDOWN ?? 6000); const SYNCWAIT = process.env.SYNCWAIT ?? 'instep';
const WINDOW = Number(process.env.WINDOW ?? 8000); const [TMIN, TMAX] = (process.env.TICK ?? '200,500').split(',').map(Number);
console.log('start', new Date().toISOString(), up(), { LEASE, P, GAP, BURST, WARM, FAULTS, RESTART, STOP, GAPMS, WINDOW, TMIN, TMAX, SYNCDELAY, SYNCWAIT, SDOWN });
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const CH = `rt/v1/i${process.pid}`;
const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(etcd.url, '/atk27i/i2-' + process.pid, LEASE), heartbeatTimeout: 2, logLevel: 'info',
  channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 200000 } } });
await Promise.all(nodes.map(start));
const m0 = await waitFor(() => masterOfT(nodes), 30000, 100);
await waitFor(() => nodes.filter((n) => n !== m0).every((n) => /"msg":"in step with the master/.test(n.log)), 30000, 100);
const L = await listener(nodes, CH);
// one replay client per broker, connected to that broker alone
const rc = {}; for (const n of nodes) { rc[n.id] = await mkClient([n], `r-${n.id}-${process.pid}`, keyPair(), { sendTimeout: 4000 }); rc[n.id].busy = 0; }
const ps = await timedProducers(nodes, CH, { P, burst: BURST, gap: GAP, sendTimeout: 1500 });
const t0 = Date.now(); const at = (t = Date.now()) => t - t0; const ev = [];
await sleep(WARM);

const reps = []; let run = true;
const roleOf = async (n) => { if (!alive(n)) return { role: '-' }; const h = await healthT(n, 500); return { role: h.body?.role ?? (h.status === 0 ? 'no answer' : '?'), epoch: h.body?.election?.epoch }; };
async function oneReplay(M, before) {
  const tAsk = Date.now(); const since = tAsk - WINDOW; const r = { by: M.id, ask: at(tAsk), epoch: before.epoch, seq: [] };
  rc[M.id].busy++;
  try { for await (const m of rc[M.id].replay(CH, { since })) if (m.data && typeof m.data.p === 'number') r.seq.push([m.data.p, m.data.n]); }
  catch (e) { r.error = e.code ?? String(e); }
  rc[M.id].busy--;
  r.end = at(); const after = await roleOf(M); r.roleAfter = after.role; r.epochAfter = after.epoch;
  // the sends judged: answered OK before the ask, made after since + 200 ms
  const has = new Set(r.seq.map(([p, n]) => p + ':' + n)); const lacks = []; let judged = 0; let storedLacking = 0;
  for (const pr of ps) for (let j = 0; j < pr.t.length; j++) {
    if (pr.t[j] < since + 200 || pr.at[j] === undefined || pr.at[j] >= tAsk) continue;
    if (pr.res[j] === 'OK') { judged++; if (!has.has(pr.i + ':' + j)) lacks.push([pr.i, j, at(pr.at[j])]); }
    else if (accepted(pr.res[j]) && !has.has(pr.i + ':' + j)) storedLacking++;
  }
  const a = analyse(r.seq, ps);
  Object.assign(r, { len: r.seq.length, judged, missingOK: lacks.length, missingStored: storedLacking, twice: a.twice, okBreaks: a.okBreaks, noMasterBreaks: a.noMasterBreaks, ex: a.ex,
    lacksFirst: lacks.slice(0, 5).map(([p, n, t]) => `${p}:${n}@${t}`), lacksLastAnswer: lacks.length ? Math.max(...lacks.map((x) => x[2])) : null,
    lacksFirstAnswer: lacks.length ? Math.min(...lacks.map((x) => x[2])) : null });
  delete r.seq;
  r.judgedOk = !r.error && r.roleAfter === 'master';
  r.broken = r.judgedOk && (r.missingOK + r.twice + r.okBreaks) > 0;
  reps.push(r);
  if (r.broken || r.missingOK || r.twice || r.okBreaks) console.log('replay off', JSON.stringify(r));
}
const loop = (async () => {
  const inflight = new Set();
  while (run) {
    const rs = await Promise.all(nodes.map(async (n) => [n, await roleOf(n)]));
    const ms = rs.filter(([, x]) => x.role === 'master');
    if (ms.length === 1 && rc[ms[0][0].id].busy < 3) { const p = oneReplay(ms[0][0], ms[0][1]); inflight.add(p); p.finally(() => inflight.delete(p)); }
    else if (ms.length > 1) ev.push(`${at()} two masters by /health: ${ms.map(([n, x]) => n.id + '@' + x.epoch)}`);
    await sleep(TMIN + Math.floor(Math.random() * (TMAX - TMIN)));
  }
  await Promise.all([...inflight]);
})();

for (const f of FAULTS) {
  const M = await waitFor(() => masterOfT(nodes), 30000, 100);
  if (!M) { ev.push(`${at()} no master for 30 s`); break; }
  if (f === 'kill') {
    await kill9(M); ev.push(`${at()} kill -9 master ${M.id}`);
    await sleep(RESTART); const ls = M.log.length; await start(M); ev.push(`${at()} ${M.id} restarted`);
  } else if (f === 'sync' || f === 'syncstop') {
    // a slave killed -9, restarted RESTART ms later; when its /health (or log) says its sync is under way (or it is in step
    // already) plus SYNCDELAY ms, the master is killed -9 (sync) or SIGSTOPped STOP ms (syncstop): the mirror that just
    // synced, maybe still applying its sync, may be elected (atk27h H1's shape)
    const S = nodes.find((n) => n !== M && alive(n));
    await kill9(S); ev.push(`${at()} kill -9 slave ${S.id}`);
    await sleep(SDOWN); const ls = S.log.length; await start(S); ev.push(`${at()} ${S.id} restarted`);
    const tp = Date.now(); let seen = 'nothing';
    while (Date.now() - tp < 30000) {
      if (/"msg":"in step with the master/.test(S.log.slice(ls))) { seen = 'in step (log)'; break; }
      const h = await healthT(S, 300); if ((h.body?.peers ?? []).some((p) => p.following && !p.inStep)) { seen = 'syncing (/health)'; if (SYNCWAIT === 'sync') break; }
      await sleep(20);
    }
    if (SYNCDELAY) await sleep(SYNCDELAY);
    const M2 = (await masterOfT(nodes)) ?? M;
    if (f === 'sync') { await kill9(M2); ev.push(`${at()} kill -9 master ${M2.id} (${S.id}: ${seen}, ${Date.now() - tp} ms after listening)`); await sleep(RESTART); await start(M2); ev.push(`${at()} ${M2.id} restarted`); }
    else { M2.proc.kill('SIGSTOP'); ev.push(`${at()} SIGSTOP master ${M2.id} (${S.id}: ${seen}, ${Date.now() - tp} ms after listening)`); await sleep(STOP); M2.proc.kill('SIGCONT'); ev.push(`${at()} SIGCONT ${M2.id}`); }
  } else {
    M.proc.kill('SIGSTOP'); ev.push(`${at()} SIGSTOP master ${M.id}`);
    await sleep(STOP); M.proc.kill('SIGCONT'); ev.push(`${at()} SIGCONT ${M.id}`);
  }
  await sleep(GAPMS);
}
await sleep(4000);
run = false; await loop;
await ps.stop(); ev.push(`${at()} producers stopped`);
const sendsPerSecondPerProducer = Math.round(ps[0].res.length / (at() / 1000));
const want = []; for (const pr of ps) pr.res.forEach((x, n) => { if (accepted(x)) want.push(pr.i + ':' + n); });
const tw = Date.now(); while (Date.now() - tw < 30000 && !want.every((k) => L.seen.has(k))) await sleep(250);
const master = await waitFor(async () => { const m = await masterOfT(nodes); return m && nodes.filter((n) => n !== m).every((n) => /"msg":"in step with the master/.test(n.log)) ? m : null; }, 30000, 200);
await sleep(20000);
const fin = {}; const whole = {}; const m2 = (await masterOfT(nodes)) ?? master ?? nodes[0];
for (const n of nodes) { whole[n.id] = await replayFrom(n, CH); fin[n.id] = analyse(whole[n.id], ps); }
const seqEq = (x, y) => x.length === y.length && x.every(([p, n], k) => y[k][0] === p && y[k][1] === n);
fin.master = m2.id; fin.sameSet = nodes.every((n) => same(whole[m2.id], whole[n.id])); fin.sameSeq = Object.fromEntries(nodes.map((n) => [n.id, seqEq(whole[m2.id], whole[n.id])]));

const judged = reps.filter((r) => r.judgedOk); const broken = judged.filter((r) => r.broken);
const sum = { replays: reps.length, judged: judged.length, failed: reps.filter((r) => r.error).length, notMasterAfter: reps.filter((r) => !r.error && r.roleAfter !== 'master').length,
  broken: broken.length, judgedSendsMax: Math.max(0, ...judged.map((r) => r.judged)), missingStoredMax: Math.max(0, ...judged.map((r) => r.missingStored)),
  noMasterBreaksMax: Math.max(0, ...judged.map((r) => r.noMasterBreaks)), byBroker: Object.fromEntries(nodes.map((n) => [n.id, judged.filter((r) => r.by === n.id).length])),
  epochs: [...new Set(judged.map((r) => r.by + '@' + r.epoch))],
  notJudgedLacking: reps.filter((r) => !r.judgedOk && !r.error && (r.missingOK + r.twice + r.okBreaks) > 0).length };
// replays within 3 s after each fault: the ones the scenario is for
const faultsAt = ev.filter((e) => /kill -9|SIGSTOP/.test(e)).map((e) => Number(e.split(' ')[0]));
sum.judgedWithin15sOfAFault = judged.filter((r) => faultsAt.some((t) => r.ask > t && r.ask - t < 15000)).length;
const finBad = nodes.reduce((s, n) => s + bad(fin[n.id]), 0);
const ok = broken.length === 0 && bad(analyse(L.firsts, ps)) + (L.count - L.seen.size) === 0 && finBad === 0 && fin.sameSet && Object.values(fin.sameSeq).every(Boolean);
check(`i2 replays of the master every ${TMIN}-${TMAX} ms across ${FAULTS.join(',')} (P=${P}, ${BURST} every ${GAP} ms each): each holds every send answered OK before it, in send order, once; final histories equal`,
  ok, { m0: m0.id, events: ev, sum, brokenReplays: broken.slice(0, 6), answers: tally(ps), sendsPerSecondPerProducer, listener: analyse(L.firsts, ps), listenerTwice: L.count - L.seen.size, final: fin, load: up() });
console.log('replays', JSON.stringify(reps.map((r) => `${r.ask}-${r.end} ${r.by}@${r.epoch}${r.roleAfter === 'master' ? '' : '>' + r.roleAfter} ${r.error ?? r.len} j${r.judged}${r.missingOK ? ' MISSING ' + r.missingOK : ''}${r.twice ? ' twice ' + r.twice : ''}${r.okBreaks ? ' breaks ' + r.okBreaks : ''}${r.missingStored ? ' ms' + r.missingStored : ''}`)));
const lines = []; for (const n of nodes) for (const l of (n.log ?? '').split('\n')) if (/elected master|no longer the elected|in step with the master|history made whole|history catch-up sent|held while catching up are queued|master while catching up|no longer wait|replay/.test(l)) lines.push(n.id + ' ' + l.slice(0, 260));
console.log(lines.sort((x, y) => (x.match(/"time":"([^"]+)"/)?.[1] ?? '').localeCompare(y.match(/"time":"([^"]+)"/)?.[1] ?? '')).join('\n'));
console.log('t0', new Date(t0).toISOString());
for (const c of Object.values(rc)) await c.disconnect().catch(() => {});
if (!ok) await keepData();
await finish(0);
