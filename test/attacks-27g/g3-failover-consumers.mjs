/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// Scenario 3: failovers under consumer traffic. a, b, c + etcd (leaseTtl 2, heartbeatTimeout 2), a plain queue channel
// (no retention). Two producers pipelining 3 sends every 5 ms to all (sendTimeout 1.5 s); two consumers of one group
// (prefetch 10 each, the client's dedupe OFF, dedupeWindow 0, so every redelivery counts, as in the nemesis) and a
// listener (dedupe on). Faults in a row, 4 s of traffic between them (FAULTS picks, default all, in this order):
//   kill    kill -9 of the master, restarted 2 s later (bound: 20 twice, both consumers' prefetch)
//   stop    SIGSTOP of the master 3.5 s (past leaseTtl), SIGCONT (bound 20)
//   step    whisker step-down on the master (bound 0)
//   slave   a slave killed -9, restarted, in step; the other slave SIGSTOPped and the master stepped down so that the
//           restarted slave is the one elected; the other SIGCONTed 1 s after (bound 0: step-down)
// Checks: every send answered OK or E_NO_MASTER with storedBy consumed at least once (0 lost) and heard by the listener;
// consumer duplicates <= the sum of the bounds (operations.md#automatic-failover: "a message is delivered twice only if it
// was in flight when the master died (at most the consumers' prefetch per failure)", step-down 0) plus 20 per unasked
// election; per producer, the consumers' first deliveries (merged in arrival order) and the listener's in send order for
// OK sends (okBreaks); breaks of E_NO_MASTER sends reported apart.
import { makeNodes, start, kill9, sleep, port, finish, startEtcdAt, electionBlock, waitFor, check, cli, mkClient, keyPair,
  up, masterOfT as masterOf, listener, producers, analyse, tally, alive, accepted } from './common.mjs';
const FAULTS = (process.env.FAULTS ?? 'kill,stop,step,slave').split(',');
console.log('start', new Date().toISOString(), up(), { FAULTS });
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const CH = 'jobs/v1/x';
const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(etcd.url, '/atk27g/g3-' + process.pid, 2), heartbeatTimeout: 2, logLevel: 'info',
  channels: { 'jobs/v1': { maxItemsInQueue: 200000 } } });
await Promise.all(nodes.map(start));
const m0 = await waitFor(() => masterOf(nodes), 30000, 100);
await waitFor(() => nodes.filter((n) => n !== m0).every((n) => /"msg":"in step with the master/.test(n.log)), 30000, 100);
const firsts = []; const seen = new Set(); const dupAt = []; let count = 0; let lastAt = Date.now(); const per = [[], []]; let redeliveredFirst = 0;
const cons = [];
for (const i of [0, 1]) {
  const C = await mkClient(nodes, `c${i}-${process.pid}`, keyPair(), { sendTimeout: 5000, dedupeWindow: 0 });
  const h = C.consume(CH, { prefetch: 10 }, (err, m, done, info) => { if (err) return; count++; lastAt = Date.now(); const k = m.p + ':' + m.n; if (seen.has(k)) dupAt.push(Date.now()); else { seen.add(k); firsts.push([m.p, m.n]); if (info?.nbRequeues > 0) redeliveredFirst++; else per[i].push([m.p, m.n]); } done(); });
  await h.ready; cons.push(C);
}
const L = await listener(nodes, CH);
const ps = await producers(nodes, CH, { P: 2, burst: 3, gap: 5, sendTimeout: 1500 });
await sleep(4000);
const log = []; let bound = 0;
const epochOf = async () => { const m = await masterOf(nodes); return m; };
const newMaster = async (old, ms = 30000) => waitFor(async () => { const m = await masterOf(nodes); return m && m !== old ? m : null; }, ms, 50);
for (const f of FAULTS) {
  const M = await waitFor(() => masterOf(nodes), 30000, 100);
  const t = Date.now();
  if (f === 'kill') {
    await kill9(M); const m1 = await newMaster(M); const el = Date.now() - t;
    await sleep(Math.max(0, 2000 - (Date.now() - t))); const ms = M.log.length; await start(M);
    const ok = await waitFor(() => /"msg":"in step with the master/.test(M.log.slice(ms)), 30000, 100);
    log.push(`kill -9 master ${M.id} at ${new Date(t).toISOString().slice(11, 23)}: ${m1?.id} elected after ${el} ms; ${M.id} restarted, in step ${!!ok}`); bound += 20;
  } else if (f === 'stop') {
    M.proc.kill('SIGSTOP'); const m1 = await newMaster(M, 3500); await sleep(Math.max(0, 3500 - (Date.now() - t))); M.proc.kill('SIGCONT');
    log.push(`SIGSTOP master ${M.id} 3.5 s at ${new Date(t).toISOString().slice(11, 23)}: ${m1?.id ?? 'nobody'} elected meanwhile`); bound += 20;
  } else if (f === 'step') {
    const r = await cli(M, 'step-down'); const m1 = await newMaster(M);
    log.push(`step-down of ${M.id} at ${new Date(t).toISOString().slice(11, 23)} (exit ${r.code}): ${m1?.id} elected after ${Date.now() - t} ms`);
  } else if (f === 'slave') {
    const [S, O] = nodes.filter((n) => n !== M);
    await kill9(S); await sleep(1500); const ms = S.log.length; await start(S);
    const ok = await waitFor(() => /"msg":"in step with the master/.test(S.log.slice(ms)), 40000, 100);
    O.proc.kill('SIGSTOP'); const t2 = Date.now();
    const r = await cli(M, 'step-down'); const m1 = await newMaster(M, 15000);
    await sleep(1000); O.proc.kill('SIGCONT');
    log.push(`slave ${S.id} killed -9, restarted (in step ${!!ok} after ${Date.now() - t} ms), ${O.id} SIGSTOPped, step-down of ${M.id} (exit ${r.code}): ${m1?.id} elected after ${Date.now() - t2} ms`);
  }
  await sleep(4000);
}
await sleep(2000);
await ps.stop();
const want = []; for (const pr of ps) pr.res.forEach((x, n) => { if (accepted(x)) want.push(pr.i + ':' + n); });
let lastCount = -1; let since = Date.now();
while (!want.every((k) => seen.has(k) && L.seen.has(k))) { if (count !== lastCount) { lastCount = count; since = Date.now(); } if (Date.now() - since > 40000) break; await sleep(500); }
await sleep(2000);
// elections not asked for: count "elected master through etcd" lines beyond one per fault (+ the first)
const elections = nodes.reduce((s, n) => s + (n.log.match(/"msg":"elected master through etcd/g) ?? []).length, 0);
const asked = 1 + FAULTS.filter((f) => f !== 'stop').length + (FAULTS.includes('stop') ? 1 : 0);
const extra = Math.max(0, elections - asked);
const rc = analyse(firsts, ps); const rl = analyse(L.firsts, ps);
// order: per consumer connection, its first deliveries with nbRequeues 0 (a redelivery may come after newer first
// deliveries, SPEC §7); the two connections' merged arrival order is not an order any connection saw
const oc = per.map((seq) => { const r = analyse(seq, ps); return { len: seq.length, okBreaks: r.okBreaks, noMasterBreaks: r.noMasterBreaks, ex: r.ex }; });
const dups = dupAt.length; const allowed = bound + 20 * extra;
check(`g3 failovers (${FAULTS.join(', ')}) under two consumers (prefetch 10, no dedupe) and a listener: 0 accepted sends lost, duplicates <= ${allowed}, first deliveries of OK sends in send order per producer (listener; each consumer, nbRequeues 0)`,
  rc.missingOK + rc.missingStored + rl.missingOK + rl.missingStored === 0 && dups <= allowed && oc.every((r) => r.okBreaks === 0) && rl.okBreaks === 0 && rl.twice === 0,
  { faults: log, answers: tally(ps), consumers: { firsts: firsts.length, deliveries: count, duplicates: dups, missingOK: rc.missingOK, missingStored: rc.missingStored, firstWasRedelivery: redeliveredFirst, orderPerConsumer: oc }, listener: { ...rl, again: L.count - L.seen.size },
    elections, unaskedElections: extra, boundTwice: allowed, lastDeliveryMsAgo: Date.now() - lastAt, load: up() });
await finish(0);
