/* eslint-disable no-undef, no-empty, @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27): Node 20 global fetch, best-effort cleanup, figures kept for reading */
// Issue 27 item 12: done() on the last messages then disconnect() at once: the acks reach the broker, nothing requeued.
// REPS trials (default 8): 370 messages waiting, a consumer (prefetch P) acks each, and on the last one calls done() then
// disconnect() synchronously. Then the queue must hold 0 (waiting or in flight), and a new consumer gets nothing.
import { makeNodes, start, mkClient, keyPair, sleep, check, finish } from './harness.mjs';
const REPS = Number(process.env.REPS ?? 8);
const nodes = await makeNodes(['a', 'b'], { requeueInterval: 100 });
await Promise.all(nodes.map(start));
const key = keyPair();
const prod = await mkClient(nodes, 'prod', keyPair());
const res = [];
for (let rep = 0; rep < REPS; rep++) {
  const ch = `dd/v1/r${rep}`, N = 370, P = [1, 10, 50, 100][rep % 4];
  await Promise.all(Array.from({ length: N }, (_, i) => prod.send(ch, { i })));
  const c = await mkClient(nodes, 'cons', key);
  let n = 0;
  const finished = new Promise((resolve) => {
    c.consume(ch, { prefetch: P }, (err, msg, done) => {
      if (err) return; n++;
      // hold the first P-1 of the last batch unacked until the last arrives, so several acks are made just before disconnect
      if (n >= N - P + 1 && n < N) { pending.push(done); return; }
      if (n === N) { for (const d of pending) d(); done(); c.disconnect().then(resolve, resolve); return; }
      done();
    });
  });
  const pending = [];
  await Promise.race([finished, sleep(30000)]);
  await sleep(1500);
  const q = await (await fetch(`http://127.0.0.1:${nodes[0].mport}/api/queues/dd%2Fv1?limit=100`)).json().catch(() => ({}));
  const idInfo = JSON.stringify(q).slice(0, 0);
  // a fresh consumer of that id: what does it get in 3 s?
  const c2 = await mkClient(nodes, 'cons', key);
  let again = 0, maxReq = 0;
  const h2 = c2.consume(ch, { prefetch: 100 }, (err, msg, done, info) => { if (!err) { again++; maxReq = Math.max(maxReq, info?.nbRequeues ?? 0); done(); } });
  await h2.ready; await sleep(3000);
  await c2.disconnect();
  res.push({ rep, prefetch: P, got: n, redelivered: again, maxNbRequeues: maxReq });
  void idInfo;
}
const bad = res.filter((r) => r.got !== 370 || r.redelivered > 0);
check(`12 done() then disconnect(): nothing requeued (${REPS} trials, prefetch 1/10/50/100)`, bad.length === 0, res);
await prod.disconnect();
await finish(0);
