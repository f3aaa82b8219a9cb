/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// Scenario 3 of atk27h (not covered by atk27g): faults repeated while a broker is catching up, on a retained channel
// (retention.seconds 3600) of a, b, c + etcd (leaseTtl 2, heartbeatTimeout 2), P producers (default 4) each pipelining BURST
// (default 2) sends every GAP ms (default 2) to all brokers (sendTimeout 1.5 s), a listener from the start.
// MODE=slave (default): a slave is killed -9, kept down DOWN ms (default 6000: it then lacks several thousand records), restarted;
//   as soon as its /health says it follows a master and is not in step yet (its sync under way) plus DELAY ms (default 0),
//   killed -9 again; this TWICE times (default 2); then restarted for good and left to come in step.
// MODE=stop: the master is SIGSTOPped STOP ms (default 4000: past its 2 s lease), SIGCONT, GAPMS (default 3000) later the
//   master then (the same or the new one) again, TWICE times in all.
// Then 5 s more traffic, the producers stop; replays of all three brokers at the verdict and 20 s later.
// Checks: every accepted send (OK, or E_NO_MASTER with storedBy) once in the listener and in every replay; each producer's
// sends in send order (OK and E_NO_MASTER breaks counted apart: the latter are documented for a frozen master, e4);
// every mirror in step 20 s later replays what its master replays, the same set and the same sequence.
// Promises: configuration.md#retention "every send answered OK is in the history once"; operations.md#history-catch-up
// "What a mirror replays in step with its master is then what its master replays, in the same order ... Nothing is missing
// or written twice"; SPEC §7 (each connection's sends in the order sent).
import { makeNodes, start, kill9, sleep, port, finish, startEtcdAt, electionBlock, waitFor, check,
  up, listener, producers, analyse, bad, same, replayFrom, tally, alive, healthT, masterOfT, keepData } from './common.mjs';
const MODE = process.env.MODE ?? 'slave'; const P = Number(process.env.P ?? 4); const GAP = Number(process.env.GAP ?? 2);
const BURST = Number(process.env.BURST ?? 2); const WARM = Number(process.env.WARM ?? 4000); const DOWN = Number(process.env.DOWN ?? 6000);
const DELAY = Number(process.env.DELAY ?? 0); const TWICE = Number(process.env.TWICE ?? 2); const STOP = Number(process.env.STOP ?? 4000); const GAPMS = Number(process.env.GAPMS ?? 3000);
console.log('start', new Date().toISOString(), up(), { MODE, P, GAP, BURST, WARM, DOWN, DELAY, TWICE, STOP, GAPMS });
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const CH = `rt/v1/h${process.pid}`;
const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(etcd.url, '/atk27h/h3-' + process.pid, 2), heartbeatTimeout: 2, logLevel: 'info',
  channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 200000 } } });
await Promise.all(nodes.map(start));
const m0 = await waitFor(() => masterOfT(nodes), 30000, 100);
await waitFor(() => nodes.filter((n) => n !== m0).every((n) => /"msg":"in step with the master/.test(n.log)), 30000, 100);
const L = await listener(nodes, CH);
const ps = await producers(nodes, CH, { P, burst: BURST, gap: GAP, sendTimeout: 1500 });
await sleep(WARM);
const ev = []; const t0 = Date.now(); const at = () => Date.now() - t0;
const ex = { m0: m0.id };
const syncing = (h) => (h.body?.peers ?? []).some((p) => p.following && !p.inStep);
const inStep = (h) => (h.body?.peers ?? []).some((p) => p.following && p.inStep);
if (MODE === 'slave') {
  const m = (await masterOfT(nodes)) ?? m0; const s = nodes.find((n) => n !== m);
  ex.slave = s.id; ex.master = m.id;
  await kill9(s); ev.push(`${at()} kill -9 slave ${s.id}`);
  await sleep(DOWN);
  for (let k = 0; k < TWICE; k++) {
    const ls = s.log.length; await start(s); ev.push(`${at()} ${s.id} restarted (listening)`);
    // poll its /health every 20 ms until it follows a master and is not in step (its sync under way)
    let caught = false; let wasInStep = false; const tp = Date.now();
    while (Date.now() - tp < 30000) {
      const h = await healthT(s, 500);
      if (syncing(h)) { caught = true; break; }
      if (inStep(h) || /"msg":"in step with the master/.test(s.log.slice(ls))) { wasInStep = true; break; }
      await sleep(20);
    }
    if (DELAY) await sleep(DELAY);
    const inStepBefore = /"msg":"in step with the master/.test(s.log.slice(ls));
    await kill9(s); ev.push(`${at()} kill -9 ${s.id} again (#${k + 1}): caught syncing=${caught}, in step before the kill=${inStepBefore || wasInStep}, ${Date.now() - tp} ms after listening`);
    await sleep(500 + Math.floor(Math.random() * 1500));
  }
  const ls = s.log.length; await start(s); ev.push(`${at()} ${s.id} restarted for good`);
  ex.inStepAtLast = !!(await waitFor(() => /"msg":"in step with the master/.test(s.log.slice(ls)), 60000, 100)); ev.push(`${at()} ${s.id} in step: ${ex.inStepAtLast}`);
} else {
  for (let k = 0; k < TWICE; k++) {
    const m = (await masterOfT(nodes)) ?? m0;
    m.proc.kill('SIGSTOP'); ev.push(`${at()} SIGSTOP master ${m.id} (#${k + 1})`);
    await sleep(STOP); m.proc.kill('SIGCONT'); ev.push(`${at()} SIGCONT ${m.id}`);
    await sleep(GAPMS);
  }
  await waitFor(async () => { const m = await masterOfT(nodes); return m && nodes.filter((n) => n !== m).every((n) => /"msg":"in step with the master/.test(n.log)); }, 30000, 200);
}
await sleep(5000);
await ps.stop(); ev.push(`${at()} producers stopped`);
ex.sendsPerSecondPerProducer = Math.round(ps[0].res.length / ((Date.now() - t0 + WARM) / 1000));
const want = []; for (const pr of ps) pr.res.forEach((x, n) => { if (x === 'OK' || /^[A-Z_]+:.+/.test(x)) want.push(pr.i + ':' + n); });
const tw = Date.now(); while (Date.now() - tw < 30000 && !want.every((k) => L.seen.has(k))) await sleep(250);
await sleep(1500);
const lacks = (seq) => { const h = new Set(seq.map(([p, n]) => p + ':' + n)); return want.filter((k) => !h.has(k)); };
const firstDiff = (a, b) => { const n = Math.min(a.length, b.length); for (let k = 0; k < n; k++) if (a[k][0] !== b[k][0] || a[k][1] !== b[k][1]) return k; return a.length === b.length ? -1 : n; };
async function replays(label) {
  const master = await masterOfT(nodes); const reps = {}; const o = { master: master?.id };
  // each broker's in-step state is read just before its replay and again just after (h3-slave-heavy-1 read it only after
  // all three replays), with the replay's start and end times
  for (const n of nodes) if (alive(n)) {
    const before = n === master || inStep(await healthT(n)); const ts = new Date().toISOString();
    reps[n.id] = await replayFrom(n, CH);
    const after = n === master || inStep(await healthT(n));
    o[n.id] = { ...analyse(reps[n.id], ps), lacks: lacks(reps[n.id]).slice(0, 6), inStepBefore: before, inStepAfter: after, from: ts.slice(11, 23), to: new Date().toISOString().slice(11, 23) };
    if (reps[n.id].error) o[n.id].replayError = reps[n.id].error;
  }
  const ids = Object.keys(reps); const mid = master?.id ?? ids[0];
  o.sameSetAsMaster = ids.every((i) => same(reps[mid], reps[i]));
  o.firstDiffFromMaster = Object.fromEntries(ids.map((i) => [i, firstDiff(reps[mid], reps[i])]));
  o.bad = ids.reduce((s, i) => s + (o[i].inStepBefore ? bad(o[i]) : 0), 0); // a broker not in step when its replay began is still catching up: not judged
  o.notInStep = ids.filter((i) => !o[i].inStepBefore);
  o.inStep = {}; for (const n of nodes) if (alive(n) && n.id !== mid) o.inStep[n.id] = inStep(await healthT(n));
  console.log(label, JSON.stringify(o));
  return o;
}
const out = { answers: tally(ps), listener: analyse(L.firsts, ps), listenerTwice: L.count - L.seen.size };
out.atVerdict = await replays('replays at the verdict');
await sleep(20000);
out.late20s = await replays('replays 20 s later');
const seqOk = Object.entries(out.late20s.firstDiffFromMaster).every(([i, d]) => d === -1 || !out.late20s.inStep[i]);
const ok = bad(out.listener) + out.listenerTwice + out.atVerdict.bad + out.late20s.bad === 0 && out.late20s.sameSetAsMaster && seqOk;
check(`h3 ${MODE === 'slave' ? `slave killed -9 ${TWICE} times during its own catch-up` : `master SIGSTOPped ${STOP} ms ${TWICE} times`} (P=${P}, ${BURST} every ${GAP} ms each): listener and every replay in send order, every accepted send once, in-step mirrors = master (set and sequence) 20 s later`,
  ok, { ...ex, events: ev, ...out, load: up() });
const lines = []; for (const n of nodes) for (const l of (n.log ?? '').split('\n')) if (/elected master|no longer the elected|in step with the master|history made whole|history catch-up sent|offered the master|held while catching up are queued|store replayed|written where they arrived|no longer wait/.test(l)) lines.push(n.id + ' ' + l.slice(0, 260));
console.log(lines.sort((x, y) => (x.match(/"time":"([^"]+)"/)?.[1] ?? '').localeCompare(y.match(/"time":"([^"]+)"/)?.[1] ?? '')).join('\n'));
if (!ok) await keepData();
await finish(0);
