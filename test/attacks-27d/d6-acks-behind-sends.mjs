// Issue 27 item 12 from a new angle: the acks of a consumer whose socket is backed up with its own sends. Docs: client.md
// #connect ("disconnect() first writes to each connected broker the acks and nacks already made (a done() just before
// disconnect() is never lost; the close follows once they are written), then closes every socket ..., fails the sends still
// waiting with E_DISCONNECTED (a send not written yet is not written)"), SPEC §3. Master a + slave b (configured mode).
// N messages on jobs/v1/x. CYCLES times: a consumer (prefetch PREFETCH) also pipelines BIG sends of 16 KB to another
// channel in one turn, takes PREFETCH deliveries, acks half with done(), nacks the other half with done(false) (client.md: done(ack = true, delaySeconds)), and calls
// disconnect() in the same turn. Then: acked ones are never delivered again (through a, nor through b promoted after
// kill -9 of a); nacked ones come back; the consumer's sends end OK or E_DISCONNECTED only.
import { makeNodes, start, kill9, cli, mkClient, keyPair, sleep, check, finish, waitFor, health, writeConfig, metrics } from './harness.mjs';
import { execFileSync } from 'node:child_process';

const N = Number(process.env.N ?? 600), PREFETCH = Number(process.env.PREFETCH ?? 40), CYCLES = Number(process.env.CYCLES ?? 5), BIG = Number(process.env.BIG ?? 1500);
const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up(), { N, PREFETCH, CYCLES, BIG });
const nodes = await makeNodes(['a', 'b'], { logLevel: 'warn', channels: { 'jobs/v1': { maxItemsInQueue: 100000 }, 'bulk/v1': { maxItemsInQueue: 100000 } } });
const [a, b] = nodes;
await Promise.all(nodes.map(start));
await waitFor(async () => (await health(b)).status === 200, 30000, 200);
const CH = 'jobs/v1/x';
const p = await mkClient(nodes, 'd6-p', keyPair());
await Promise.all(Array.from({ length: N }, (_, i) => p.send(CH, { i })));
const key = keyPair();
const acked = new Set(), nacked = new Set(), count = new Map(); const ackedAgain = []; const per = []; const sendCodes = {};
const pad = 'x'.repeat(16 * 1024);
for (let c = 0; c < CYCLES; c++) {
  const cc = await mkClient(nodes, 'd6-cons', key, { handlerRetry: { initialSeconds: 1, factor: 1, maxSeconds: 1 } });
  const held = []; let fire; const full = new Promise((r) => { fire = r; }); let closing = false;
  cc.consume(CH, { prefetch: PREFETCH }, (err, msg, done) => {
    if (err) return; if (acked.has(msg.i)) ackedAgain.push(msg.i); count.set(msg.i, (count.get(msg.i) ?? 0) + 1);
    if (closing) return; held.push([msg.i, done]); if (held.length === PREFETCH) fire();
  });
  await Promise.race([full, sleep(10000)]);
  const sends = Array.from({ length: BIG }, (_, j) => cc.send('bulk/v1/y', { c, j, pad }).then(() => 'OK', (e) => e.code));
  closing = true;
  held.forEach(([i, d], j) => { if (j % 2 === 0) { d(); acked.add(i); } else { d(false); nacked.add(i); } });
  const t0 = Date.now(); await cc.disconnect(); const ms = Date.now() - t0;
  for (const s of await Promise.all(sends)) sendCodes[s] = (sendCodes[s] ?? 0) + 1;
  per.push(`${held.length} held, disconnect ${ms} ms`);
}
await sleep(1500);
const drain = await mkClient([a], 'd6-cons', key); let last = Date.now();
drain.consume(CH, { prefetch: 50 }, (err, msg, done) => { if (err) return; if (acked.has(msg.i)) ackedAgain.push(msg.i); last = Date.now(); count.set(msg.i, (count.get(msg.i) ?? 0) + 1); done(); });
await waitFor(() => count.size >= N && Date.now() - last > 2500, 40000, 200);
await drain.disconnect();
const missing = N - count.size;
const ma = await metrics(a); const bulkStored = Object.entries(ma ?? {}).filter(([k]) => k.startsWith('whisker_messages_received_total') && k.includes('bulk/v1')).reduce((x, [, v]) => x + v, 0);
const badSend = Object.keys(sendCodes).filter((k) => k !== 'OK' && k !== 'E_DISCONNECTED');
check('d6.1 done()/done(false) then disconnect() with 1,500 x 16 KB sends queued on the same socket: no acked message delivered again, none missing, sends end OK or E_DISCONNECTED',
  ackedAgain.length === 0 && missing === 0 && badSend.length === 0,
  { cycles: per, acked: acked.size, nacked: nacked.size, ackedDeliveredAgain: ackedAgain.length, ex: ackedAgain.slice(0, 6), missing, consumerSends: sendCodes, bulkReceivedByMaster: bulkStored });
await kill9(a); b.config.isMaster = true; writeConfig(b); await cli(b, 'reload');
await waitFor(async () => (await health(b)).body?.role === 'master', 15000, 200);
const after = []; const c2 = await mkClient([b], 'd6-cons', key);
c2.consume(CH, { prefetch: 50 }, (err, msg, done) => { if (!err) { after.push(msg.i); done(); } });
await sleep(5000); await c2.disconnect();
check('d6.2 the slave promoted after kill -9 of the master redelivers none of the acked messages', after.filter((i) => acked.has(i)).length === 0,
  { redelivered: after.length, ofThemAcked: after.filter((i) => acked.has(i)).length, ex: after.slice(0, 8) });
console.log(up());
await p.disconnect();
await finish(0);
