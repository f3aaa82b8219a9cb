// Attack 3: a client given ONE broker's address (set b's slave) reaches queues placed on set a
// (pinned) and queues placed by hashing; the docs' "first program" (client.md) runs unchanged.
// Promise (SPEC §13, client.md "Clusters"): code written for one broker runs unchanged, E_MOVED never
// reaches application code, a client may be given any brokers of the cluster.
// Usage: nice -n 10 node test/attacks-31/attack3-one-address.mjs
import { startEtcd, startCluster, mkClient, sleep, load, waitMaster, cliAsync } from './lib.mjs';

const etcd = await startEtcd(); await etcd.start();
const nodes = await startCluster(etcd.url, { a: ['a1', 'a2'], b: ['b1', 'b2'] }, () => ({ channels: { 'orders/v1': { set: 'a' } } }));
await waitMaster(nodes, 'a'); const mb = await waitMaster(nodes, 'b');
const seed = nodes.find((n) => n.set === 'b' && n !== mb);
console.log(`seed: ${seed.id} (set b, slave) only; ${load()}`);
const broken = [];
// the docs' first program, unchanged but for hosts/keysDirectory
const mq = await mkClient('shop', [seed.spec]);
const got = []; const errs = [];
mq.on('error', (e) => errs.push(e.code));
const handle = mq.consume('orders/v1/*', (err, order, done) => { if (err) { errs.push(err.code); return; } got.push(order.qty); done(); });
await handle.ready;
const t0 = Date.now();
const sendRes = await mq.send('orders/v1/eu', { sku: 'A-1', qty: 2 }).then(() => 'OK', (e) => e.code);
while (!got.length && Date.now() - t0 < 20000) await sleep(50);
console.log(`first program: send ${sendRes}, delivered [${got}] in ${Date.now() - t0} ms`);
if (sendRes !== 'OK' || got.length !== 1) broken.push(`first program: send ${sendRes}, delivered ${got.length}`);
// 20 queues placed by hashing (both sets get some), each: subscribe, 20 sends, all delivered once
const per = {}; const sendErr = {};
const hs = [];
for (let q = 0; q < 20; q++) hs.push(mq.listen(`h${q}/v1/*`, (err) => { if (err) { errs.push(err.code); return; } per[`h${q}`] = (per[`h${q}`] ?? 0) + 1; }));
const readyState = hs.map(() => 'pending'); hs.forEach((h, i) => h.ready.then(() => (readyState[i] = 'ok'), (e) => (readyState[i] = e.code)));
const tr0 = Date.now(); while (readyState.includes('pending') && Date.now() - tr0 < 40000) await sleep(100);
console.log(`listen ready after ${Date.now() - tr0} ms: ${JSON.stringify(readyState)}`);
const ready = readyState.map((r) => ({ status: r === 'ok' ? 'fulfilled' : 'rejected' }));
const sends = [];
for (let q = 0; q < 20; q++) for (let i = 0; i < 20; i++) sends.push(mq.send(`h${q}/v1/x`, { i }).catch((e) => { sendErr[e.code] = (sendErr[e.code] ?? 0) + 1; }));
let settled = 0; sends.forEach((p) => p.then(() => settled++));
const ts0 = Date.now(); while (settled < sends.length && Date.now() - ts0 < 45000) await sleep(100);
console.log(`sends settled ${settled}/${sends.length} after ${Date.now() - ts0} ms`);
if (settled < sends.length) broken.push(`${sends.length - settled} sends never settled in 45 s (sendTimeout 30 s)`);
const t1 = Date.now(); while (Object.values(per).reduce((a, b) => a + b, 0) < 400 && Date.now() - t1 < 20000) await sleep(100);
const st = await cliAsync(['cluster', 'status', '--placements', '-c', seed.config]);
const onA = (st.out.match(/^h\d+\/v1\s+a$/gm) ?? []).length, onB = (st.out.match(/^h\d+\/v1\s+b$/gm) ?? []).length;
const total = Object.values(per).reduce((a, b) => a + b, 0);
console.log(JSON.stringify({ readyRejected: ready.filter((r) => r.status === 'rejected').length, sendErrors: sendErr, delivered: total, of: 400, placedOnA: onA, placedOnB: onB, errorsSeenByApp: errs, load: load() }));
if (readyState.includes('pending')) broken.push(`${readyState.filter((r) => r === 'pending').length} listen handles never ready in 40 s`);
if (total !== 400) broken.push(`hashed queues: delivered ${total} of 400`);
if (errs.length) broken.push(`errors reached app code: ${errs}`);
if (Object.keys(sendErr).length) broken.push(`send errors ${JSON.stringify(sendErr)}`);
if (!onA || !onB) broken.push(`placements not on both sets (a ${onA}, b ${onB}): test did not cross sets`);
console.log(broken.length ? `BROKEN: ${broken.join('; ')}` : 'HELD');
process.exit(broken.length ? 1 : 0);
