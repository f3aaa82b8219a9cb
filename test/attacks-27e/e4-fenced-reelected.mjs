// Angle 4: a master fenced and elected again while the others cannot campaign. a, b, c + etcd (leaseTtl LEASE, default 4),
// two producers pipelining BURST sends every 5 ms to a retained channel on all three, a listener and a consumer.
// Phase 1: a SIGSTOPped STOP1 ms (default 3000: past its fence LEASE/2, within its lease): same-epoch resumption.
// Phase 2: b and c SIGSTOPped, a SIGSTOPped STOP2 ms (default 6000: past its lease), a SIGCONT, elected again (only it
// runs), b and c SIGCONT 1 s after. Promises: operations.md#automatic-failover ("The same master elected again"), SPEC §7,
// #history-catch-up ("A master paused past its lease ... judges its fence before anything its sockets hold"), lost 0.
import { makeNodes, start, sleep, port, finish, startEtcdAt, electionBlock, waitFor, writeConfig, health, check } from './harness.mjs';
import { up, masterOf, listener, producers, verdict, consumer, analyse, bad, drain, replayFrom } from './common.mjs';
const LEASE = Number(process.env.LEASE ?? 4); const STOP1 = Number(process.env.STOP1 ?? 3000); const STOP2 = Number(process.env.STOP2 ?? 6000); const BURST = Number(process.env.BURST ?? 3);
console.log('start', new Date().toISOString(), up(), { LEASE, STOP1, STOP2, BURST });
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const CH = 'rt/v1/x';
const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(etcd.url, '/atk27e/e4-' + process.pid, LEASE), heartbeatTimeout: 5, logLevel: 'info',
  channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 200000 } } });
for (const n of nodes) { n.config.isMaster = true; writeConfig(n); }
await Promise.all(nodes.map(start));
const a = await waitFor(() => masterOf(nodes), 30000, 100);
const others = nodes.filter((n) => n !== a);
await waitFor(() => others.every((n) => /"msg":"in step with the master/.test(n.log)), 60000, 100);
const L = await listener(nodes, CH); const C = await consumer(nodes, CH);
const ps = await producers(nodes, CH, { P: 2, burst: BURST, gap: 5, sendTimeout: 1500 });
await sleep(3000);
const ep = async (n) => (await health(n)).body?.election?.epoch;
const e0 = await ep(a);
a.proc.kill('SIGSTOP'); await sleep(STOP1); a.proc.kill('SIGCONT');
const m1 = await waitFor(() => masterOf(nodes), 30000, 100); const e1 = await ep(m1);
console.log('phase 1: master', m1?.id, 'epoch', e0, '->', e1, up());
await sleep(4000);
const mA = m1; const oth = nodes.filter((n) => n !== mA);
for (const n of oth) n.proc.kill('SIGSTOP');
await sleep(200); mA.proc.kill('SIGSTOP'); await sleep(STOP2); mA.proc.kill('SIGCONT');
const t0 = Date.now(); const ok2 = await waitFor(async () => (await health(mA)).body?.role === 'master', 30000, 100); const tRe = Date.now() - t0; const e2 = await ep(mA);
await sleep(1000); for (const n of oth) n.proc.kill('SIGCONT');
console.log('phase 2: re-elected', !!ok2, mA.id, 'in', tRe, 'ms, epoch', e2, up());
await waitFor(async () => { let k = 0; for (const n of oth) if ((await health(n)).status === 200) k++; return k === oth.length; }, 60000, 200);
await sleep(3000);
await ps.stop(); await sleep(3000);
await verdict(`e4 fence: ${a.id} stopped ${STOP1} ms (epoch ${e0}->${e1}), then others frozen + ${mA.id} stopped ${STOP2} ms, re-elected (${tRe} ms, epoch ${e2}): listener + replays in send order, 0 lost, 0 twice, equal`, nodes, CH, ps, L,
  { logs: nodes.map((n) => n.id + ': ' + ['resumed its feed', 'in step with the master again', 'the master was fenced', 'elected master through etcd'].map((s) => s.split(' ').pop() + '=' + (n.log.split(s).length - 1)).join(',')) });
const tw = Date.now(); const want = ps.flatMap((pr) => pr.res.map((x, n) => [pr.i, n, x])).filter(([, , x]) => x === 'OK' || /^[A-Z_]+:.+/.test(x));
while (Date.now() - tw < 20000 && !want.every(([p, n]) => C.seen.has(p + ':' + n))) await sleep(250);
await drain(C, ps);
const rc = analyse(C.firsts, ps);
check('e4: consumer first deliveries in send order per producer, none missing', bad(rc) === 0, { consumer: rc, drain: C.drainInfo, deliveries: C.count, load: up() });
if (process.env.LATE) { // replays again LATE ms later: are the slaves' histories still short of the master's?
  await sleep(Number(process.env.LATE)); const late = {};
  for (const n of nodes) { const r = await replayFrom(n, CH); const k = new Set(r.map(([p, x]) => p + ':' + x)); late[n.id] = { len: r.length, distinct: k.size }; }
  check(`e4: replays ${process.env.LATE} ms later equal in length`, new Set(Object.values(late).map((x) => x.distinct)).size === 1 && Object.values(late).every((x) => x.len === x.distinct), { late, load: up() });
}
await finish(0);
