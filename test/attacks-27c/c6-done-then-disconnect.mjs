// Issue 27 item 12: done() then disconnect() at once keeps the acks. Master a + slave b (configured mode), N messages
// (default 400) on jobs/v1/x. CYCLES times: a consumer (same name, same key, prefetch PREFETCH) connects, takes PREFETCH
// deliveries, calls done() on each of them and disconnect() in the same turn. Then a last consumer drains the queue.
// Docs: client.md#connect ("disconnect() first writes to each connected broker the acks and nacks already made (a done()
// just before disconnect() is never lost; the close follows once they are written)"). Expected: no message delivered
// twice, none left; the slave promoted at the end (kill -9 a, reload b isMaster true) delivers nothing (acks reached it).
import { makeNodes, start, kill9, cli, mkClient, keyPair, sleep, check, finish, waitFor, health, writeConfig } from './harness.mjs';
import { execFileSync } from 'node:child_process';

const N = Number(process.env.N ?? 400), PREFETCH = Number(process.env.PREFETCH ?? 50), CYCLES = Number(process.env.CYCLES ?? 6);
const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up(), { N, PREFETCH, CYCLES });
const nodes = await makeNodes(['a', 'b'], { logLevel: 'warn' }); const [a, b] = nodes;
await Promise.all(nodes.map(start));
await waitFor(async () => (await health(b)).status === 200, 30000, 200);
const CH = 'jobs/v1/x';
const p = await mkClient(nodes, 'c6-p', keyPair());
const sent = await Promise.all(Array.from({ length: N }, (_, i) => new Promise((r) => p.send(CH, { i }, (err) => r(err ? err.code : 'OK')))));
const key = keyPair();
const count = new Map(); const perCycle = []; const acked = new Set(); const ackedAgain = [];
for (let c = 0; c < CYCLES; c++) {
  const cc = await mkClient(nodes, 'c6-cons', key);
  const held = [];
  let fire; const full = new Promise((r) => { fire = r; });
  let closing = false; let late = 0;
  cc.consume(CH, { prefetch: PREFETCH }, (err, msg, done) => { if (err) return; if (acked.has(msg.i)) ackedAgain.push(msg.i); count.set(msg.i, (count.get(msg.i) ?? 0) + 1);
    if (closing) { late++; return; } held.push([msg.i, done]); if (held.length === PREFETCH) fire(); });
  await Promise.race([full, sleep(10000)]);
  // done() on every held delivery and disconnect() in the same turn
  closing = true;
  for (const [i, d] of held) { d(); acked.add(i); }
  await cc.disconnect();
  perCycle.push(`${held.length} done + ${late} arrived during disconnect (not done)`);
}
await sleep(1000);
const drain = await mkClient(nodes, 'c6-cons', key);
let last = Date.now();
drain.consume(CH, { prefetch: PREFETCH }, (err, msg, done) => { if (err) return; if (acked.has(msg.i)) ackedAgain.push(msg.i); last = Date.now(); count.set(msg.i, (count.get(msg.i) ?? 0) + 1); done(); });
await waitFor(() => count.size >= N && Date.now() - last > 2000, 30000, 200);
await sleep(1500);
await drain.disconnect();
const twice = [...count].filter(([, v]) => v > 1).map(([i]) => i);
const missing = N - count.size;
check('c6 done() then disconnect() at once: no message done() before disconnect() delivered again, none missing', ackedAgain.length === 0 && missing === 0,
  { sent: sent.filter((x) => x === 'OK').length, cycles: perCycle, doneBeforeDisconnect: acked.size, doneButDeliveredAgain: ackedAgain.length, ex: ackedAgain.slice(0, 8), twiceInAll: twice.length, missing });
// promote the slave: it must hold nothing unacked
await kill9(a); b.config.isMaster = true; writeConfig(b); await cli(b, 'reload');
await waitFor(async () => (await health(b)).body?.role === 'master', 15000, 200);
const after = []; const c2 = await mkClient([b], 'c6-cons', key);
c2.consume(CH, { prefetch: PREFETCH }, (err, msg, done) => { if (!err) { after.push(msg.i); done(); } });
await sleep(4000); await c2.disconnect();
check('c6 the slave promoted after a kill -9 of the master delivers nothing (every ack reached it)', after.length === 0, { redelivered: after.length, ex: after.slice(0, 8) });
console.log(up());
await p.disconnect();
await finish(0);
