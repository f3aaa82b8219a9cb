/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// New angle f1: an election broker acted on while it catches up AS MASTER. a, b, c + etcd (leaseTtl 2, heartbeatTimeout 4).
// Two producers pipelining 3 sends every 5 ms to all (sendTimeout 1.5 s), a listener and a consumer (prefetch 10, acks each)
// from the start. The master is killed -9; the two others are SIGSTOPped at once (they cannot campaign), the master is
// restarted and, as the last master, elected again while catching up: it holds its clients' copies for its peers' offers.
// ACTION=reload (default): `whisker reload` on it 3 times 300 ms apart from its election (the second with a changed live
// key: requeueInterval), the peers SIGCONT HOLD ms after the election (default 1500).
// ACTION=stepdown: the peers SIGCONT HOLD ms after the election, `whisker step-down` on it STEPAT ms after (default 200),
// while it still waits for their offers; then whoever may campaign is elected. ACTION=none: the same without an action (control).
// PAUSE=ms: the elected master SIGSTOPped that long as soon as a peer logs its offer (F1's fence, forced; 1300: past
// leaseTtl / 2, within leaseTtl, so it resumes under the same epoch and its peers resume its feed without a sync).
// LATE=ms: every broker's replay taken again that long after the verdict (a lag or a loss).
// Promises: operations.md#reload ("Reload keeps every peer link"), #catching-up (copies held until every peer ended its
// offer or 5 s, then queued; "A consumer or listener therefore gets each connection's sends in the order sent across a
// restart and a failover"), #history-catch-up ("Nothing is missing or written twice"), #automatic-failover (step-down:
// "Zero duplicates"; lost 0; twice at most the in-flight window per failover).
import { makeNodes, start, kill9, sleep, port, finish, startEtcdAt, electionBlock, waitFor, writeConfig, health, check, cli } from './harness.mjs';
import { up, masterOf, listener, producers, verdict, consumer, analyse, bad, drain, accepted, replayFrom } from './common.mjs';
const ACTION = process.env.ACTION ?? 'reload'; const HOLD = Number(process.env.HOLD ?? 1500); const STEPAT = Number(process.env.STEPAT ?? 200);
console.log('start', new Date().toISOString(), up(), { ACTION, HOLD, STEPAT });
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const CH = 'rt/v1/x';
const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(etcd.url, '/atk27f/f1-' + process.pid, 2), heartbeatTimeout: 4, logLevel: 'info',
  channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 200000 } } });
await Promise.all(nodes.map(start));
const m0 = await waitFor(() => masterOf(nodes), 30000, 100);
const others = nodes.filter((n) => n !== m0);
await waitFor(() => others.every((n) => /"msg":"in step with the master/.test(n.log)), 30000, 100);
const L = await listener(nodes, CH); const C = await consumer(nodes, CH);
const ps = await producers(nodes, CH, { P: 2, burst: 3, gap: 5, sendTimeout: 1500 });
await sleep(3000);
const tKill = Date.now(); await kill9(m0); for (const n of others) n.proc.kill('SIGSTOP');
const mk = m0.log.length; await start(m0);
await waitFor(async () => (await health(m0)).body?.role === 'master', 30000, 50); const tEl = Date.now();
const ex = { master: m0.id };
if (ACTION === 'reload') {
  const outs = [];
  for (let i = 0; i < 3; i++) {
    if (i === 1) { m0.config.requeueInterval = 45; writeConfig(m0); } else if (i === 2) { delete m0.config.requeueInterval; writeConfig(m0); }
    const r = await cli(m0, 'reload'); outs.push(`${Date.now() - tEl}ms:${r.code}:${r.out.trim().slice(0, 80)}`); await sleep(300);
  }
  ex.reloads = outs;
  while (Date.now() - tEl < HOLD) await sleep(50);
  for (const n of others) n.proc.kill('SIGCONT');
} else if (ACTION === 'none') {
  while (Date.now() - tEl < HOLD) await sleep(50);
  for (const n of others) n.proc.kill('SIGCONT');
} else {
  while (Date.now() - tEl < HOLD) await sleep(50);
  for (const n of others) n.proc.kill('SIGCONT');
  await sleep(STEPAT);
  const held = m0.log.slice(mk); ex.holdingAtStepDown = /wait for the peers' offers/.test(held) && !/held while catching up are queued/.test(held);
  const tS = Date.now(); const r = await cli(m0, 'step-down'); ex.stepDown = `${Date.now() - tEl}ms after election, took ${Date.now() - tS} ms: ${r.code} ${r.out.trim().slice(0, 160)}`;
  const t1 = Date.now(); const m1 = await waitFor(async () => { const m = await masterOf(nodes); return m && (m !== m0 || Date.now() - t1 > 500) ? m : null; }, 30000, 50);
  ex.afterStepDown = { master: m1?.id, msAfterStepDown: Date.now() - t1 };
}
if (process.env.PAUSE) { // F1's sequence forced: the master paused (past leaseTtl / 2, within leaseTtl) as a peer's offer reaches it
  await waitFor(() => others.some((n) => /offered the master what only this broker stored/.test(n.log)), 20000, 5);
  m0.proc.kill('SIGSTOP'); await sleep(Number(process.env.PAUSE)); m0.proc.kill('SIGCONT'); ex.paused = `${process.env.PAUSE} ms at ${Date.now() - tEl - Number(process.env.PAUSE)} ms after the election`;
}
await sleep(8000);
await ps.stop();
const lg = m0.log.slice(mk);
ex.lines = [...(lg.match(/[^\n]*(wait for the peers' offers|no longer wait|held while catching up are queued|ended its offer|step|reload|link|no longer the elected|fenced)[^\n]*/g) ?? [])].map((l) => l.slice(0, 220)).slice(0, 16);
ex.slaveLines = others.map((n) => `${n.id}: ` + (n.log.match(/[^\n]*(offered the master|fenced|in step with the master again|written where they arrived|did not name)[^\n]*/g) ?? []).map((l) => l.slice(0, 200)).join(' || '));
ex.fenced = /no longer the elected master/.test(lg);
ex.peerLinkLines = nodes.map((n) => `${n.id}: ${(n.log.match(/[^\n]*(link (lost|closed|down)|peer link)[^\n]*/g) ?? []).length}`);
await verdict(`f1 ACTION=${ACTION}: ${m0.id} killed -9, elected again while catching up (peers frozen ${HOLD} ms), ${ACTION} during its hold: listener + replays in send order per producer, 0 lost, 0 twice, equal`, nodes, CH, ps, L, ex);
// the accepted sends the listener never got: when were they sent (ms from the election), how answered
const miss = []; for (const pr of ps) pr.res.forEach((x, j) => { if (accepted(x) && !L.seen.has(pr.i + ':' + j)) miss.push([pr.t[j] - tEl, x]); });
if (miss.length) console.log('missing for the listener:', JSON.stringify({ n: miss.length, sentMsFromElection: [Math.min(...miss.map((m) => m[0])), Math.max(...miss.map((m) => m[0]))], answers: miss.reduce((t, [, x]) => ({ ...t, [x]: (t[x] ?? 0) + 1 }), {}), kill: tKill - tEl }));
await drain(C, ps);
const rc = analyse(C.firsts, ps);
check(`f1 ACTION=${ACTION}: consumer (prefetch 10) first deliveries in send order, none missing; deliveries beyond the first (bound: 10 per failover)`, bad(rc) === 0 && C.count - C.seen.size <= 10,
  { consumer: rc, again: C.count - C.seen.size, drain: C.drainInfo, load: up() });
if (process.env.LATE) { // replays again LATE ms later: a lag (records held for the feed, written after 30 s) or a loss
  await sleep(Number(process.env.LATE)); const late = {};
  for (const n of nodes) { const r = await replayFrom(n, CH); late[n.id] = analyse(r, ps); }
  const lens = Object.values(late).map((r) => r.len);
  check(`f1 replays ${process.env.LATE} ms after the verdict: equal and whole`, lens.every((x) => x === lens[0]) && Object.values(late).every((r) => bad(r) === 0), { ...late, slaveLines: others.map((n) => (n.log.match(/[^\n]*written where they arrived[^\n]*/g) ?? []).map((l) => l.slice(0, 200))) });
}
await finish(0);
