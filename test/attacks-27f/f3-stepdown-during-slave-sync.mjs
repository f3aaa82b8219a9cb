/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// New angle f3: `whisker step-down` on the master while a slave catches up. a, b, c + etcd (leaseTtl 2, heartbeatTimeout 4).
// Two producers pipelining 3 sends every 5 ms to all (sendTimeout 1.5 s), a listener and a consumer (prefetch 10) from the
// start. After 4 s the slave S (the first non-master) is killed -9, restarted 1.5 s later, and AT ms after it listens
// (default 0: its sync under way) the master steps down. The other slave, in step, should be elected at once; S then
// syncs with the new master. Then 6 s more traffic, the old master steps down again only if STEP2=1 (back and forth).
// Promises: operations.md#automatic-failover ("a slave in step is elected at once. Zero duplicates"; lost 0), #catching-up
// and #history-catch-up (order per connection, nothing missing or written twice, replays equal), the 2 x leaseTtl pause.
import { makeNodes, start, kill9, sleep, port, finish, startEtcdAt, electionBlock, waitFor, check, cli } from './harness.mjs';
import { up, masterOf, listener, producers, verdict, consumer, analyse, bad, drain } from './common.mjs';
const AT = Number(process.env.AT ?? 0);
console.log('start', new Date().toISOString(), up(), { AT, STEP2: !!process.env.STEP2 });
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const CH = 'rt/v1/x';
const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(etcd.url, '/atk27f/f3-' + process.pid, 2), heartbeatTimeout: 4, logLevel: 'info',
  channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 200000 } } });
await Promise.all(nodes.map(start));
const m0 = await waitFor(() => masterOf(nodes), 30000, 100);
const [S, O] = nodes.filter((n) => n !== m0);
await waitFor(() => [S, O].every((n) => /"msg":"in step with the master/.test(n.log)), 30000, 100);
const L = await listener(nodes, CH); const C = await consumer(nodes, CH);
const ps = await producers(nodes, CH, { P: 2, burst: 3, gap: 5, sendTimeout: 1500 });
await sleep(4000);
await kill9(S); await sleep(1500);
const ms = S.log.length; await start(S); const tS = Date.now();
await sleep(AT);
const syncingAtStepDown = !/"msg":"in step with the master/.test(S.log.slice(ms));
const t0 = Date.now(); const r = await cli(m0, 'step-down'); const tookMs = Date.now() - t0;
const m1 = await waitFor(async () => { const m = await masterOf(nodes); return m && m !== m0 ? m : null; }, 30000, 50); const tNew = Date.now() - t0;
const inStep = await waitFor(() => /"msg":"in step with the master/.test(S.log.slice(ms)) && (S.log.slice(ms).match(/[^\n]*"msg":"in step with the master[^\n]*/g) ?? []).some((l) => l.includes(`"master":"${m1?.id}"`)), 60000, 100);
const ex = { m0: m0.id, slaveRestarted: S.id, syncingAtStepDown, stepDown: `${r.code} ${r.out.trim().slice(0, 160)} (took ${tookMs} ms, ${Date.now() - tS} ms after S listened)`, newMaster: m1?.id, newMasterMsAfterStepDownCall: tNew,
  sInStepWithNew: !!inStep, sLines: (S.log.slice(ms).match(/[^\n]*(in step|held while catching up are queued|sync)[^\n]*/g) ?? []).map((l) => l.slice(0, 200)).slice(0, 8) };
if (process.env.STEP2) { await sleep(3000); const r2 = await cli(m1, 'step-down'); const m2 = await waitFor(async () => { const m = await masterOf(nodes); return m && m !== m1 ? m : null; }, 30000, 50); ex.step2 = `${r2.code} -> ${m2?.id}`; }
await sleep(6000);
await ps.stop();
await verdict(`f3 AT=${AT}: step-down of master ${m0.id} while slave ${S.id} catches up after a kill -9 (${syncingAtStepDown ? 'sync under way' : 'already in step'}), ${m1?.id} elected ${tNew} ms after: listener + replays in send order, 0 lost, 0 twice, equal`, nodes, CH, ps, L, ex);
check(`f3: a slave in step elected at once (< 2 s of the step-down call) and not the restarted one`, !!m1 && m1 !== S && tNew < 2000, { newMaster: m1?.id, tNew });
await drain(C, ps);
const rc = analyse(C.firsts, ps);
check(`f3: consumer first deliveries in send order, none missing, step-down 0 twice`, bad(rc) === 0 && C.count === C.seen.size, { consumer: rc, again: C.count - C.seen.size, drain: C.drainInfo, load: up() });
await finish(0);
