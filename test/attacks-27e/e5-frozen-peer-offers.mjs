// Angle 5: the documented 5 s bound. a, b, c + etcd (leaseTtl 2, heartbeatTimeout 10 so a frozen peer's link stays up past
// 5 s). Two producers pipelining to all (sendTimeout 1.5 s), a listener. etcd stopped, master killed -9, restarted while
// etcd is down; b and c SIGSTOPped while etcd comes back (so the restarted master is elected), then c SIGCONT at once and
// b kept frozen FREEZE ms (default 9000). Checks: deliveries resume (time of the first new first-delivery after the
// election), the log line `clients' messages no longer wait for the peers' offers` and when, lost 0 and twice 0 (order
// breaks are allowed past the bound: reported). KILL=1: the elected master is killed -9 2 s after its election (while it
// still waits for b's offer and holds its clients' copies), restarted; then b SIGCONT.
import { makeNodes, start, kill9, sleep, port, finish, startEtcdAt, electionBlock, waitFor, writeConfig, health, check } from './harness.mjs';
import { up, masterOf, listener, producers, verdict } from './common.mjs';
const FREEZE = Number(process.env.FREEZE ?? 9000);
console.log('start', new Date().toISOString(), up(), { FREEZE, KILL: !!process.env.KILL });
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const CH = 'rt/v1/x';
const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(etcd.url, '/atk27e/e5-' + process.pid, 2), heartbeatTimeout: 10, logLevel: 'info',
  channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 200000 } } });
for (const n of nodes) { n.config.isMaster = true; writeConfig(n); }
await Promise.all(nodes.map(start));
const m0 = await waitFor(() => masterOf(nodes), 30000, 100);
await sleep(2000);
const L = await listener(nodes, CH);
const times = []; const origSeen = L.seen.add.bind(L.seen); L.seen.add = (k) => { times.push(Date.now()); return origSeen(k); };
const ps = await producers(nodes, CH, { P: 2, gap: 3, sendTimeout: 1500 });
await sleep(2000);
await etcd.stop(); await sleep(500);
await kill9(m0); await sleep(3000); const mk = m0.log.length; await start(m0); await sleep(1500);
const [fz, other] = nodes.filter((n) => n !== m0);
fz.proc.kill('SIGSTOP'); other.proc.kill('SIGSTOP');
const tEtcd = Date.now(); await etcd.start();
await waitFor(async () => (await health(m0)).body?.role === 'master', 30000, 50); const tEl = Date.now();
other.proc.kill('SIGCONT');
if (FREEZE < 2000) fz.proc.kill('SIGCONT'); // FREEZE=0: nobody frozen past the election
let extra = {};
if (process.env.KILL) {
  await sleep(2000); const hl = m0.log.slice(mk); extra.beforeKill = { waiting: /wait for the peers' offers/.test(hl), queued: /held while catching up are queued/.test(hl) };
  await kill9(m0); await sleep(1000); await start(m0);
}
while (Date.now() - tEl < FREEZE) await sleep(100);
if (FREEZE >= 2000) fz.proc.kill('SIGCONT'); const tCont = Date.now();
await sleep(8000);
await ps.stop();
const firstAfter = times.find((t) => t > tEl);
// sends made in the first second after the election: when did the listener get them (ms after the election)
const lat = []; for (const pr of ps) pr.t.forEach((t, j) => { if (t > tEl && t < tEl + 1000) { const at = L.at.get(pr.i + ':' + j); lat.push(at ? at - tEl : Infinity); } });
lat.sort((x, y) => x - y); const logl = m0.log.slice(mk);
const noLonger = logl.match(/[^\n]*no longer wait for the peers' offers[^\n]*/)?.[0]; const queued = logl.match(/[^\n]*held while catching up are queued[^\n]*/g);
extra = { ...extra, electedAfterEtcdMs: tEl - tEtcd, firstNewDeliveryAfterElectionMs: firstAfter ? firstAfter - tEl : null, sendsOfFirstSecondListenedMsAfterElection: lat.length ? { n: lat.length, min: lat[0], max: lat[lat.length - 1] } : null, frozenForMsAfterElection: tCont - tEl, deliveredWhileFrozen: times.filter((t) => t > tEl && t < tCont).length,
  noLongerWaitLine: noLonger?.slice(0, 300), queuedLines: queued?.map((x) => x.slice(0, 300)), waitLine: logl.match(/[^\n]*wait for the peers' offers[^\n]*/)?.[0]?.slice(0, 300) };
check('e5 deliveries resume while a peer is frozen (within ~5 s of the election) and the log names the bound', !!firstAfter && firstAfter - tEl < 8000 && (!!noLonger || !!process.env.KILL || FREEZE < 2000), extra);
await verdict(`e5 FREEZE=${FREEZE}${process.env.KILL ? ' KILL' : ''}: 0 lost, 0 twice, replays equal (order breaks past the 5 s bound are allowed by the docs)`, nodes, CH, ps, L, {});
await finish(0);
