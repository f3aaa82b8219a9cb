/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// Follow-up of e2's stalled consumer: a, b (+ etcd, leaseTtl 2). Two producers pipelining BURST sends every 5 ms to both.
// The master a is killed -9 (no slave restart before), b elected; a consumer (prefetch 10, acks each) subscribes while a is
// down; RESTART=1 (default): a restarted 3 s later. Producers stop 5 s after; the consumer's count is sampled every 2 s
// for 60 s. Promise: lost 0 (every accepted send delivered to the consumer group; requeueInterval 30 s bounds a stall).
import { makeNodes, start, kill9, sleep, port, finish, startEtcdAt, electionBlock, waitFor, check } from './harness.mjs';
import { up, masterOf, producers, consumer, analyse, bad, accepted, listener } from './common.mjs';
const LISTEN = process.env.LISTEN === '1'; const SLAVERESTART = process.env.SLAVERESTART === '1';
const BURST = Number(process.env.BURST ?? 3); const RESTART = (process.env.RESTART ?? '1') === '1';
console.log('start', new Date().toISOString(), up(), { BURST, RESTART });
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const CH = 'rt/v1/x';
const nodes = await makeNodes(['a', 'b'], { election: electionBlock(etcd.url, '/atk27e/e7-' + process.pid, 2), heartbeatTimeout: 2, logLevel: 'info',
  channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 200000 } } });
const [a, b] = nodes;
await start(a); await waitFor(async () => (await masterOf(nodes)) === a, 30000, 100); await start(b);
await waitFor(() => /"msg":"in step with the master/.test(b.log), 30000, 100);
if (LISTEN) await listener(nodes, CH);
const ps = await producers(nodes, CH, { P: 2, burst: BURST, gap: 5, sendTimeout: 1500 });
await sleep(4000);
const marks = {};
if (SLAVERESTART) { marks.bKill = Date.now(); await kill9(b); await sleep(2000); const m = b.log.length; marks.bStart = Date.now(); await start(b); await waitFor(() => /"msg":"in step with the master/.test(b.log.slice(m)), 60000, 50); marks.bInStep = Date.now(); await sleep(1000); }
marks.aKill = Date.now();
await kill9(a); const tk = Date.now();
await waitFor(async () => (await masterOf(nodes)) === b, 30000, 100); const tEl = Date.now() - tk;
const C = await consumer(nodes, CH); const t0 = Date.now(); const tl = [];
const sample = setInterval(() => tl.push(`${((Date.now() - t0) / 1000).toFixed(0)}s:${C.count}`), 2000);
if (RESTART) { await sleep(3000); await start(a); tl.push(`a-restarted@${((Date.now() - t0) / 1000).toFixed(0)}s`); }
await sleep(5000); await ps.stop(); tl.push(`producers-stopped@${((Date.now() - t0) / 1000).toFixed(0)}s`);
const want = ps.flatMap((pr) => pr.res.map((x, n) => [pr.i, n, x])).filter(([, , x]) => accepted(x));
const tw = Date.now(); while (Date.now() - tw < Number(process.env.WAIT ?? 60000) && !want.every(([p, n]) => C.seen.has(p + ':' + n))) await sleep(500);
clearInterval(sample);
const rc = analyse(C.firsts, ps);
if (process.env.DUMP) (await import('node:fs')).writeFileSync(process.env.DUMP, JSON.stringify({ firsts: C.firsts, res: ps.map((pr) => pr.res), t: ps.map((pr) => pr.t), marks }));
const bl = await (await fetch(`http://127.0.0.1:${b.mport}/metrics`)).text().catch(() => '');
check(`e7 LISTEN=${LISTEN} SLAVERESTART=${SLAVERESTART}: consumer subscribed on b after a's kill -9 (b elected ${tEl} ms after)${RESTART ? ', a restarted 3 s later' : ''}: every accepted send delivered within 60 s after the producers stopped`, bad(rc) === 0,
  { consumer: rc, deliveries: C.count, lastDeliveryAgoMs: Date.now() - (C.last ?? t0), timeline: tl.join(' '), accepted: want.length,
    bMetrics: bl.split('\n').filter((l) => /^whisker_(queue|messages_in_flight|inflight|messages_waiting|deliver)/.test(l)).slice(0, 8), load: up() });
await finish(0);
