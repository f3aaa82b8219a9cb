// Angle 1 (d10 again, with loss and replay-equality checks): a, b, c + etcd (leaseTtl 2), two producers pipelining every
// 2 ms to all (sendTimeout 1.5 s), a listener. etcd stopped, the master killed -9, restarted 3 s later while etcd is down,
// etcd back. FORCE=1: the two others SIGSTOPped while etcd comes back so the restarted master is elected.
// Promises: SPEC §7 order per connection; operations.md#catching-up "A consumer or listener therefore gets each connection's
// sends in the order sent across a restart and a failover"; #history-catch-up "Nothing is missing or written twice".
import { makeNodes, start, kill9, sleep, port, finish, startEtcdAt, electionBlock, waitFor, writeConfig, health } from './harness.mjs';
import { up, masterOf, listener, producers, verdict } from './common.mjs';
console.log('start', new Date().toISOString(), up());
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const CH = 'rt/v1/x';
const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(etcd.url, '/atk27e/e1-' + process.pid, 2), heartbeatTimeout: 2, logLevel: 'info',
  channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 100000 } } });
for (const n of nodes) { n.config.isMaster = true; writeConfig(n); }
await Promise.all(nodes.map(start));
const m0 = await waitFor(() => masterOf(nodes), 30000, 100);
await sleep(2000);
const L = await listener(nodes, CH);
const ps = await producers(nodes, CH, { P: 2, gap: 2, sendTimeout: 1500 });
await sleep(2000);
await etcd.stop(); await sleep(500);
await kill9(m0); await sleep(3000); await start(m0); await sleep(1500);
const others = nodes.filter((n) => n !== m0);
if (process.env.FORCE) for (const n of others) n.proc.kill('SIGSTOP');
const tb = Date.now(); await etcd.start();
if (process.env.FORCE) { await waitFor(async () => (await health(m0)).body?.role === 'master', 30000, 100); for (const n of others) n.proc.kill('SIGCONT'); }
const m1 = await waitFor(() => masterOf(nodes), 30000, 100); const tm = Date.now() - tb;
await sleep(6000);
await ps.stop();
await verdict(`e1 d10${process.env.FORCE ? ' FORCE' : ''}: etcd down, master ${m0.id} killed -9 + restarted, etcd back, ${m1?.id} elected ${tm} ms after: listener first deliveries + every replay in send order per producer, 0 lost, 0 twice, replays equal`,
  nodes, CH, ps, L, { killed: m0.id, elected: m1?.id, held: nodes.map((n) => (n.log.match(/[^\n]*clients' messages held while catching up are queued[^\n]*/g) ?? []).slice(-1)[0]).filter(Boolean) });
await finish(0);
