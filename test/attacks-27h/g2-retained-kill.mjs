/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// Scenario 2: a retained channel (retention.seconds 3600) on a, b, c + etcd (leaseTtl 2, heartbeatTimeout 2). P producers
// (default 3) each pipelining one send every GAP ms (default 1, so a frame every 1-2 ms) to all brokers (sendTimeout 1.5 s),
// a listener from the start. A fresh channel per run (its first frames are item 3's case). WARM ms of traffic (default
// 4000), then KILL=1 (default): the master is killed -9 with sends in flight (the client re-sends them to the others),
// restarted 2 s later, 5 s more traffic. KILL=0: no fault.
// Checks: the listener's first deliveries, and each broker's replay, in send order per producer; every accepted send
// (OK, or E_NO_MASTER with storedBy) in the listener and in every replay once; every mirror's replay the same set as its
// master's (and, reported, whether the sequences are equal record for record).
// Promises: SPEC §7, issue 27 items 3-4, configuration.md#retention "every send answered OK is in the history once",
// operations.md#history-catch-up "What a mirror replays in step with its master is then what its master replays".
// atk27h copy: the replays are always taken again 20 s later (late20s) and judged too (a lag is not a loss; a loss that
// stays is); on BROKEN the brokers' directories are kept (keepData). The masters' election history is printed.
import { makeNodes, start, kill9, sleep, port, finish, startEtcdAt, electionBlock, waitFor, check,
  up, masterOf, healthT, listener, producers, analyse, bad, same, replayFrom, tally, alive } from './common.mjs';
import { keepData } from './common.mjs';
const KILL = process.env.KILL !== '0'; const P = Number(process.env.P ?? 3); const GAP = Number(process.env.GAP ?? 1); const WARM = Number(process.env.WARM ?? 4000); const BURST = Number(process.env.BURST ?? 1);
console.log('start', new Date().toISOString(), up(), { KILL, P, GAP, WARM, BURST });
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const CH = `rt/v1/x${process.pid}`;
const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(etcd.url, '/atk27h/g2-' + process.pid, 2), heartbeatTimeout: 2, logLevel: 'info',
  channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 200000 } } });
await Promise.all(nodes.map(start));
const m0 = await waitFor(() => masterOf(nodes), 30000, 100);
await waitFor(() => nodes.filter((n) => n !== m0).every((n) => /"msg":"in step with the master/.test(n.log)), 30000, 100);
const L = await listener(nodes, CH);
const ps = await producers(nodes, CH, { P, burst: BURST, gap: GAP, sendTimeout: 1500 });
await sleep(WARM);
const tw = Date.now(); const ex = { m0: m0.id };
if (KILL) {
  const inFlight = ps.reduce((s, pr) => s + pr.res.length, 0);
  await kill9(m0); const tk = Date.now();
  const m1 = await waitFor(async () => { const m = await masterOf(nodes); return m && m !== m0 ? m : null; }, 30000, 50);
  ex.m1 = m1?.id; ex.electedMsAfterKill = Date.now() - tk;
  await sleep(Math.max(0, 2000 - (Date.now() - tk)));
  const ms = m0.log.length; await start(m0);
  ex.m0InStep = !!(await waitFor(() => /"msg":"in step with the master/.test(m0.log.slice(ms)), 30000, 100));
  await sleep(5000);
}
else await sleep(5000);
await ps.stop();
ex.sendsPerSecondPerProducer = Math.round(ps[0].res.length / ((Date.now() - tw + WARM) / 1000));
// wait for the listener to have every accepted send (30 s at most)
const want = []; for (const pr of ps) pr.res.forEach((x, n) => { if (x === 'OK' || /^[A-Z_]+:.+/.test(x)) want.push(pr.i + ':' + n); });
const t0 = Date.now(); while (Date.now() - t0 < 30000 && !want.every((k) => L.seen.has(k))) await sleep(250);
await sleep(1500);
const master = await masterOf(nodes);
const out = { answers: tally(ps), listener: analyse(L.firsts, ps), listenerTwice: L.count - L.seen.size, master: master?.id };
const reps = {};
// whether each broker followed a master in step just before its replay (a broker still syncing may lack records: a lag)
const inStepNow = async (n) => (((await healthT(n)).body?.peers) ?? []).some((p) => p.following && p.inStep);
out.inStepAtVerdict = {};
for (const n of nodes) if (alive(n)) { out.inStepAtVerdict[n.id] = n === master || await inStepNow(n); reps[n.id] = await replayFrom(n, CH); out[n.id] = analyse(reps[n.id], ps); if (reps[n.id].error) out[n.id].replayError = reps[n.id].error; }
const ids = Object.keys(reps);
const mid = master?.id ?? ids[0];
out.mirrorsSameSetAsMaster = ids.every((i) => same(reps[mid], reps[i]));
out.mirrorsSameSequence = Object.fromEntries(ids.map((i) => [i, reps[i].length === reps[mid].length && reps[i].every(([p, n], k) => reps[mid][k][0] === p && reps[mid][k][1] === n)]));
// a lag or a loss? when something is off, every replay is taken again 20 s later, with the ids a replay lacks
const lacks = (seq) => { const h = new Set(seq.map(([p, n]) => p + ':' + n)); return want.filter((k) => !h.has(k)); };
for (const i of ids) if (lacks(reps[i]).length) out[i].lacks = lacks(reps[i]).slice(0, 8);
await sleep(20000); out.late20s = {}; const late = {};
const master2 = await masterOf(nodes); out.late20s.master = master2?.id;
for (const i of ids) { const r = late[i] = await replayFrom(nodes.find((n) => n.id === i), CH); out.late20s[i] = { ...analyse(r, ps), lacks: lacks(r).slice(0, 8) }; }
const lm = master2?.id ?? mid;
out.late20s.sameSetAsMaster = ids.every((i) => same(late[lm], late[i]));
out.late20s.sameSequence = Object.fromEntries(ids.map((i) => [i, late[i].length === late[lm].length && late[i].every(([p, n], k) => late[lm][k][0] === p && late[lm][k][1] === n)]));
const lateBad = ids.reduce((s, i) => s + bad(out.late20s[i]), 0);
const total = bad(out.listener) + ids.reduce((s, i) => s + bad(out[i]), 0) + out.listenerTwice + lateBad;
check(`g2 retained ${KILL ? `kill -9 of master ${m0.id}` : 'no fault'} (P=${P}, a send every ${GAP} ms each): listener and every replay in send order, every accepted send once, mirrors = master`,
  total === 0 && out.mirrorsSameSetAsMaster && out.late20s.sameSetAsMaster, { ...ex, ...out, load: up() });
const elections = []; for (const n of nodes) for (const l of (n.log ?? '').split('\n')) if (/elected master|no longer the elected|in step with the master|history made whole|history catch-up sent|offered the master|held while catching up are queued|store replayed/.test(l)) elections.push(n.id + ' ' + l.slice(0, 260));
console.log(elections.sort((x, y) => (x.match(/"time":"([^"]+)"/)?.[1] ?? '').localeCompare(y.match(/"time":"([^"]+)"/)?.[1] ?? '')).join('\n'));
if (!(total === 0 && out.mirrorsSameSetAsMaster && out.late20s.sameSetAsMaster)) await keepData();
await finish(0);
