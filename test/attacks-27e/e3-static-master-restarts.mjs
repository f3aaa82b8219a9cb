// Angle 3: a mirror set WITHOUT election (a isMaster, b slave). Two producers pipelining BURST sends every 5 ms to both,
// a listener and a consumer throughout. PHASES (default master,slave,both): master = a killed -9, restarted DOWN ms later;
// slave = b killed -9, restarted; both = a and b killed -9 at once, both restarted. Producers keep sending throughout.
// Promises: operations.md#catching-up (a configured master at its start holds its clients' copies until its peers' offers
// end, so each connection's sends stay in order), #history-catch-up, SPEC §7; lost 0 (configured mode table).
import { makeNodes, start, kill9, sleep, finish, waitFor, check } from './harness.mjs';
import { up, masterOf, listener, producers, verdict, consumer, analyse, bad, drain } from './common.mjs';
const DOWN = Number(process.env.DOWN ?? 3000); const BURST = Number(process.env.BURST ?? 3);
const AGAIN = Number(process.env.AGAIN ?? 300);
const PHASES = (process.env.PHASES ?? 'master,slave,both').split(',');
console.log('start', new Date().toISOString(), up(), { DOWN, BURST, PHASES });
const CH = 'rt/v1/x';
const nodes = await makeNodes(['a', 'b'], { heartbeatTimeout: 2, logLevel: 'info', channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 200000 } } });
const [a, b] = nodes;
await start(a); await start(b);
await waitFor(() => /"msg":"in step with the master/.test(b.log), 30000, 100);
const L = await listener(nodes, CH);
const C = await consumer(nodes, CH);
const ps = await producers(nodes, CH, { P: 2, burst: BURST, gap: 5, sendTimeout: 1500 });
await sleep(3000);
const inStep = async (n, mark) => waitFor(() => /"msg":"in step with the master/.test(n.log.slice(mark)), 60000, 50);
for (const ph of PHASES) {
  const t0 = Date.now();
  if (ph === 'master') { await kill9(a); await sleep(DOWN); const m = b.log.length; await start(a); await inStep(b, m); }
  if (ph === 'slave') { await kill9(b); await sleep(DOWN); const m = b.log.length; await start(b); await inStep(b, m); }
  // killed again AGAIN ms after it listens (catch-up not over: it holds clients' copies), then restarted
  if (ph === 'master2x') { await kill9(a); await sleep(DOWN); await start(a); await sleep(AGAIN); const hold = /held while catching up are queued/.test(a.log.slice(-20000)); await kill9(a); console.log('a killed again; queued line seen before:', hold); await sleep(1000); const m = b.log.length; await start(a); await inStep(b, m); }
  if (ph === 'slave2x') { await kill9(b); await sleep(DOWN); let m = b.log.length; await start(b); await sleep(AGAIN); console.log('b in step before 2nd kill:', /"msg":"in step with the master/.test(b.log.slice(m))); await kill9(b); await sleep(1000); m = b.log.length; await start(b); await inStep(b, m); }
  if (ph === 'both') { await Promise.all([kill9(a), kill9(b)]); await sleep(DOWN); const m = b.log.length; await Promise.all([start(a), start(b)]); await inStep(b, m); }
  console.log(ph, 'done in', Date.now() - t0, 'ms; master', (await masterOf(nodes))?.id, up());
  await sleep(3000);
}
await ps.stop();
await sleep(3000);
await verdict(`e3 static isMaster, phases ${PHASES} (down ${DOWN} ms): listener + replays in send order per producer, 0 lost, 0 twice, equal`, nodes, CH, ps, L,
  { held: nodes.map((n) => (n.log.match(/[^\n]*clients' messages (held while catching up are queued|no longer wait)[^\n]*/g) ?? [])).flat().slice(-4) });
const t0 = Date.now(); const want = ps.flatMap((pr) => pr.res.map((x, n) => [pr.i, n, x])).filter(([, , x]) => x === 'OK' || /^[A-Z_]+:.+/.test(x));
while (Date.now() - t0 < 20000 && !want.every(([p, n]) => C.seen.has(p + ':' + n))) await sleep(250);
await drain(C, ps);
const rc = analyse(C.firsts, ps);
check(`e3 phases ${PHASES}: consumer first deliveries in send order per producer, none missing`, bad(rc) === 0, { consumer: rc, drain: C.drainInfo, deliveries: C.count, load: up() });
await finish(0);
