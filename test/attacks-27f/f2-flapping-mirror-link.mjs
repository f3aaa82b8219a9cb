/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// New angle f2: a producer whose link to ONE mirror flaps. a (master), b (slave) + etcd (leaseTtl 2, heartbeatTimeout 2).
// Producer 0 reaches a directly and b through a TCP proxy written here; producer 1 reaches both directly (control). Each
// pipelines 3 sends every 5 ms (sendTimeout 1.5 s). A consumer (prefetch 10, acks each) and a listener read from the master
// from the start. The proxy flaps: cut for 100-500 ms every 300-900 ms (seeded). MODE=rst (default): its sockets destroyed
// and new ones refused; MODE=silent: bytes stop flowing both ways (no FIN, no RST) and flow again at the heal (a cut past
// heartbeatTimeout is seen as a lost link: in silent mode every 5th cut lasts 2.5-3.5 s, past the brokers' 2 s). FLAP_MS of flapping (default 6000), then the master a is killed -9, b elected
// (now the flapping link is to the master), flapping goes on FLAP_MS more, a restarted, flapping stops, producers stop.
// Promises: SPEC §7 and operations.md#catching-up (per-connection order for a consumer and a listener across a failover),
// #what-each-broker-does (a send that reached only a slave is offered to the master and delivered), lost 0, twice at most
// the in-flight window per failover (prefetch 10), #history-catch-up (replays equal, nothing missing or twice).
import { makeNodes, start, kill9, sleep, port, finish, startEtcdAt, electionBlock, waitFor, check } from './harness.mjs';
import { up, masterOf, listener, producers, verdict, consumer, analyse, bad, drain } from './common.mjs';
import net from 'node:net';
const MODE = process.env.MODE ?? 'rst'; const FLAP_MS = Number(process.env.FLAP_MS ?? 6000); let seed = Number(process.env.SEED ?? Date.now() % 100000);
const SEED0 = seed; const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
console.log('start', new Date().toISOString(), up(), { MODE, FLAP_MS, SEED: SEED0 });

// a flapping TCP proxy: rst = destroy every socket and refuse new ones while cut; silent = stop moving bytes while cut
async function flapProxy(targetPort, mode) {
  const P = { cut: false, pairs: new Set(), cuts: 0, destroyed: 0 };
  const pump = (from, to, pair) => from.on('data', (d) => { if (P.cut && mode === 'silent') pair.q.push([to, d]); else to.write(d); });
  P.server = net.createServer((s) => {
    if (P.cut && mode === 'rst') { s.destroy(); return; }
    const t = net.connect(targetPort, '127.0.0.1'); const pair = { s, t, q: [] }; P.pairs.add(pair);
    pump(s, t, pair); pump(t, s, pair);
    const end = () => { s.destroy(); t.destroy(); P.pairs.delete(pair); };
    for (const x of [s, t]) { x.on('error', end); x.on('close', end); }
  });
  P.port = await port(); await new Promise((r) => P.server.listen(P.port, '127.0.0.1', r));
  P.down = () => { P.cut = true; P.cuts++; if (mode === 'rst') for (const p of P.pairs) { P.destroyed++; p.s.destroy(); p.t.destroy(); } };
  P.up = () => { P.cut = false; for (const p of P.pairs) { for (const [to, d] of p.q) to.write(d); p.q = []; } };
  return P;
}
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const CH = 'rt/v1/x';
const nodes = await makeNodes(['a', 'b'], { election: electionBlock(etcd.url, '/atk27f/f2-' + process.pid, 2), heartbeatTimeout: 2, logLevel: 'info',
  channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 200000 } } });
const [a, b] = nodes;
await start(a); await waitFor(async () => (await masterOf(nodes)) === a, 30000, 100); await start(b);
await waitFor(() => /"msg":"in step with the master/.test(b.log), 30000, 100);
const px = await flapProxy(b.port, MODE);
const viaPx = [{ host: a.host }, { host: `127.0.0.1:${px.port}@b` }];
const L = await listener(nodes, CH); const C = await consumer(nodes, CH);
const p0 = await producers(viaPx, CH, { P: 1, burst: 3, gap: 5, sendTimeout: 1500, name: 'flap' });
const p1 = await producers(nodes, CH, { P: 1, burst: 3, gap: 5, sendTimeout: 1500, name: 'ctl', first: 1 });
const ps = [p0[0], p1[0]]; ps.stop = async () => { await p0.stop(); await p1.stop(); };
let flapping = true; const cutLog = [];
const flapLoop = (async () => { while (flapping) { await sleep(300 + rnd() * 600); if (!flapping) break; const d = MODE === 'silent' && px.cuts % 5 === 4 ? 2500 + rnd() * 1000 : 100 + rnd() * 400; px.down(); cutLog.push(Math.round(d)); await sleep(d); px.up(); } })();
await sleep(FLAP_MS);
await kill9(a); const tk = Date.now();
const m1 = await waitFor(async () => (await masterOf(nodes)) === b ? b : null, 30000, 100); const tEl = Date.now() - tk;
await sleep(FLAP_MS);
const ma = a.log.length; await start(a); await waitFor(() => /"msg":"in step with the master/.test(a.log.slice(ma)), 60000, 100);
flapping = false; await flapLoop; px.up();
await sleep(2000); await ps.stop(); await sleep(2000);
const ex = { electedB: m1 ? tEl : 'no', cuts: px.cuts, cutMsSum: cutLog.reduce((s, x) => s + x, 0), socketsDestroyed: px.destroyed, p0Errors: p0[0].c.errors.length,
  lines: [a, b].map((n) => `${n.id}: ` + (n.log.match(/[^\n]*(held while catching up are queued|did not name are queued|written where they arrived|offered the master)[^\n]*/g) ?? []).map((l) => l.slice(0, 200)).slice(-3).join(' || ')) };
await verdict(`f2 MODE=${MODE} seed ${SEED0}: producer 0's link to one mirror flapping (${px.cuts} cuts), master killed -9 after ${FLAP_MS} ms (b elected), flapping on to the new master, a back: listener + replays in send order, 0 lost, 0 twice, equal`, nodes, CH, ps, L, ex);
await drain(C, ps);
const rc = analyse(C.firsts, ps);
check(`f2 MODE=${MODE}: consumer first deliveries in send order per producer, none missing; again <= 10 (prefetch, one failover)`, bad(rc) === 0 && C.count - C.seen.size <= 10,
  { consumer: rc, again: C.count - C.seen.size, drain: C.drainInfo, load: up() });
await finish(0);
