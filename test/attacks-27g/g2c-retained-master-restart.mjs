/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// Scenario 2, issue 27 item 4's own case: configured mode (no election), a master a and a slave b (SINGLE=1: a alone), a
// retained channel; 3 producers pipelining a send every GAP ms (default 1) with sendTimeout 10 s, so the sends in flight
// at a kill -9 are re-sent by the client to the restarted master and answered OK by it. KILLS times (default 3) the master
// is killed -9 and restarted 1 s later (still the master), 3 s of traffic between. Checks: every send answered OK in the
// listener and in each broker's replay once, in send order per producer; the slave's replay the same set as its master's.
// Promises: configuration.md#retention "every send answered OK is in the history once"; operations.md#history-catch-up.
import { makeNodes, start, kill9, sleep, finish, waitFor, check, up, listener, producers, analyse, bad, same, replayFrom, tally, accepted } from './common.mjs';
const KILLS = Number(process.env.KILLS ?? 3); const GAP = Number(process.env.GAP ?? 1); const SINGLE = !!process.env.SINGLE;
console.log('start', new Date().toISOString(), up(), { KILLS, GAP, SINGLE });
const CH = `rt/v1/y${process.pid}`;
const nodes = await makeNodes(SINGLE ? ['a'] : ['a', 'b'], { logLevel: 'info', heartbeatTimeout: 2,
  channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 200000 } } });
const [A] = nodes;
await Promise.all(nodes.map(start));
if (!SINGLE) await waitFor(() => /"msg":"in step with the master/.test(nodes[1].log), 30000, 100);
const L = await listener(nodes, CH);
const ps = await producers(nodes, CH, { P: 3, burst: 1, gap: GAP, sendTimeout: 10000 });
await sleep(3000);
const ex = { kills: [] };
for (let k = 0; k < KILLS; k++) {
  const pending = ps.reduce((s, pr) => s + pr.t.length - pr.res.filter(Boolean).length, 0);
  await kill9(A); await sleep(1000); await start(A);
  ex.kills.push({ pendingAtKill: pending });
  await sleep(3000);
}
await ps.stop();
const want = []; for (const pr of ps) pr.res.forEach((x, n) => { if (accepted(x)) want.push(pr.i + ':' + n); });
const t0 = Date.now(); while (Date.now() - t0 < 30000 && !want.every((kk) => L.seen.has(kk))) await sleep(250);
await sleep(1500);
const out = { answers: tally(ps), listener: analyse(L.firsts, ps) };
const reps = {};
for (const n of nodes) { reps[n.id] = await replayFrom(n, CH); out[n.id] = analyse(reps[n.id], ps); }
out.slaveSameSetAsMaster = SINGLE || same(reps.a, reps.b);
// a lag or a loss? what is missing is looked for again 20 s later (listener and replays)
if (bad(out.listener) + nodes.reduce((s, n) => s + bad(out[n.id]), 0) > 0) {
  await sleep(20000); out.late20s = { listener: analyse(L.firsts, ps) };
  for (const n of nodes) out.late20s[n.id] = analyse(await replayFrom(n, CH), ps);
}
const total = bad(out.listener) + nodes.reduce((s, n) => s + bad(out[n.id]), 0);
check(`g2c ${SINGLE ? 'single broker' : 'configured master + slave'}: master killed -9 and restarted ${KILLS} times under 3 pipelining producers (re-sends answered OK after the restart): every accepted send (OK, E_NO_MASTER with storedBy) once in listener and replays, in send order`,
  total === 0 && out.slaveSameSetAsMaster, { ...ex, ...out, load: up() });
await finish(0);
