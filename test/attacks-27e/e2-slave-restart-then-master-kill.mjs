/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// Angle 2: a, b (+ etcd, leaseTtl 2, election). Two producers pipelining BURST sends every 5 ms to both, a listener.
// The slave b is killed -9, restarted 2 s later, and once its log says `in step with the master`, the master a is killed
// -9 DELAY ms later (default 200). b is elected; a consumer subscribes only then. a is restarted (slave) and in step.
// Promises: operations.md#catching-up ("a slave killed -9 under a connection pipelining ..., restarted 2 s later, in step,
// and promoted 1 s after that gave a consumer subscribing afterwards its messages in order"), #history-catch-up (replays
// equal, nothing missing or twice), SPEC §7.
import { makeNodes, start, kill9, sleep, port, finish, startEtcdAt, electionBlock, waitFor, writeConfig, check, health } from './harness.mjs';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { alive, up, masterOf, listener, producers, verdict, consumer, analyse, bad, drain } from './common.mjs';
const DELAY = Number(process.env.DELAY ?? 200); const BURST = Number(process.env.BURST ?? 3);
console.log('start', new Date().toISOString(), up(), { DELAY, BURST });
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const CH = 'rt/v1/x';
const nodes = await makeNodes(['a', 'b'], { election: electionBlock(etcd.url, '/atk27e/e2-' + process.pid, 2), heartbeatTimeout: 2, logLevel: 'info',
  channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 200000 } } });
const [a, b] = nodes;
await start(a); await waitFor(async () => (await masterOf(nodes)) === a, 30000, 100); await start(b);
await waitFor(() => /"msg":"in step with the master/.test(b.log), 30000, 100);
const L = await listener(nodes, CH);
const ps = await producers(nodes, CH, { P: 2, burst: BURST, gap: 5, sendTimeout: 1500 });
await sleep(3000);
await kill9(b); await sleep(2000);
const mark = b.log.length; await start(b);
const tIn = Date.now(); await waitFor(() => /"msg":"in step with the master/.test(b.log.slice(mark)), 60000, 20); const inStepAfter = Date.now() - tIn;
await sleep(DELAY);
await kill9(a); const tk = Date.now();
const m1 = await waitFor(async () => (await masterOf(nodes)) === b ? b : null, Number(process.env.NOMASTER ?? 30000), 100); const tm = Date.now() - tk;
const hb = await health(b); const inStepFile = (() => { try { return readFileSync(join(b.config.dataDirectory, 'in-step.json'), 'utf8'); } catch (e) { return String(e); } })();
const bLines = b.log.slice(mark).split('\n').filter((l) => /in step|elected|campaign|acts as/.test(l)).map((l) => l.slice(0, 260));
check(`e2 DELAY=${DELAY}: b (in step ${inStepAfter} ms after its restart) elected within leaseTtl + ~1 s of the master's kill -9`, !!m1 && tm < 6000,
  { electedAfterMs: m1 ? tm : `none within ${tm} ms`, bHealth: { status: hb.status, election: hb.body?.election, reason: hb.body?.reason }, inStepFile, bLines });
if (!m1) { const m2 = a.log.length; await start(a); await waitFor(() => masterOf(nodes), 30000, 100); console.log('a restarted to get a master:', (await masterOf(nodes))?.id); }
const C = await consumer(nodes, CH); const tC = Date.now(); const tl = []; const smp = setInterval(() => tl.push(`${((Date.now() - tC) / 1000).toFixed(0)}s:${C.count}`), 2000);
await sleep(3000);
const mark2 = a.log.length; if (!alive(a)) await start(a);
await waitFor(() => /"msg":"in step with the master/.test(a.log.slice(mark2)), 60000, 100);
await sleep(2000);
await ps.stop();
await sleep(3000);
const ok = await verdict(`e2 DELAY=${DELAY}: slave b killed -9, restarted, in step (${inStepAfter} ms), master a killed -9 ${DELAY} ms later, ${m1?.id} master ${tm} ms after: listener + replays of a and b in send order per producer, 0 lost, 0 twice, equal`,
  nodes, CH, ps, L, { heldLines: nodes.map((n) => (n.log.match(/[^\n]*clients' messages held while catching up are queued[^\n]*/g) ?? [])).flat().slice(-3) });
await drain(C, ps);
clearInterval(smp);
const mt = []; for (const n of nodes) { const t = await (await fetch(`http://127.0.0.1:${n.mport}/metrics`)).text().catch(() => ''); mt.push(n.id + ' ' + t.split('\n').filter((l) => /^whisker_queue_(depth|in_flight|messages|consumers|group_in_flight_max)/.test(l)).join(' | ')); }
const rc = analyse(C.firsts, ps);
// the consumer subscribed after the failover: it must get every accepted send not acked before ... nobody acked before, so all
check(`e2 DELAY=${DELAY}: consumer subscribed after the failover: each producer's sends in order, none missing`, bad(rc) === 0, { consumer: rc, drain: C.drainInfo, timeline: tl.join(' '), metrics: mt, deliveries: C.count });
await finish(0);
