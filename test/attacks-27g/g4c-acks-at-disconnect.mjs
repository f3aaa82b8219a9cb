/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// Scenario 4, acks at disconnect: a master a and a slave b (configured mode). TRIALS times (default 5): N messages
// (default 370) sent to a fresh queue; a consumer (prefetch N) calls done() on each as it comes and disconnect() right
// after the last done(), in the same turn. Then a second consumer of the queue for 3 s must get nothing, and both
// brokers' depth for that queue (GET /api/queues) must be 0 with nothing in flight.
// Promise: client.md disconnect() "first writes to each connected broker the acks and nacks already made (a done() just
// before disconnect() is never lost...)"; issue 27 item 12.
import { makeNodes, start, sleep, finish, waitFor, check, mkClient, keyPair, up } from './common.mjs';
const TRIALS = Number(process.env.TRIALS ?? 5); const N = Number(process.env.N ?? 370);
console.log('start', new Date().toISOString(), up(), { TRIALS, N });
const nodes = await makeNodes(['a', 'b'], { logLevel: 'info', heartbeatTimeout: 2 });
await Promise.all(nodes.map(start));
await waitFor(() => /"msg":"in step with the master/.test(nodes[1].log), 30000, 100);
const P = await mkClient(nodes, `p-${process.pid}`, keyPair());
const key = keyPair();
const rows = [];
for (let t = 0; t < TRIALS; t++) {
  const ch = `ad${t}/v1/x`;
  const C = await mkClient(nodes, `c-${process.pid}`, key);
  let got = 0; let fin;
  const allIn = new Promise((r) => { fin = r; });
  const h = C.consume(ch, { prefetch: N }, (err, m, done) => { if (err) return; got++; done(); if (got === N) { C.disconnect(); fin(); } });
  await h.ready;
  await Promise.all(Array.from({ length: N }, (_, i) => P.send(ch, { i })));
  await Promise.race([allIn, sleep(20000)]);
  await sleep(500);
  const C2 = await mkClient(nodes, `c-${process.pid}`, key);
  let again = 0; let maxReq = 0;
  await C2.consume(ch, { prefetch: 50 }, (err, m, done, info) => { if (err) return; again++; done(); }).ready;
  await sleep(3000);
  await C2.disconnect();
  const q = {};
  for (const n of nodes) { try { const r = await fetch(`http://127.0.0.1:${n.mport}/api/queues/${encodeURIComponent(`ad${t}/v1`)}`); const j = await r.json(); const o = j.queue ?? j; q[n.id] = Object.fromEntries(Object.entries(o).filter(([k, v]) => typeof v === 'number' && /depth|flight|wait|held/i.test(k))); q[n.id].status = r.status; } catch (e) { q[n.id] = String(e); } }
  rows.push({ trial: t, got, redeliveredToSecondConsumer: again, queues: q });
}
const bad = rows.filter((r) => r.got !== N || r.redeliveredToSecondConsumer > 0 || Object.values(r.queues).some((x) => typeof x !== 'object' || Object.entries(x).some(([k, v]) => k !== 'status' && v)));
check(`g4c acks made just before disconnect(): ${TRIALS} trials of ${N}: none redelivered, queues empty on master and slave`, bad.length === 0, { rows, load: up() });
await finish(0);
