// Attack 4: etcd faults. Promise (SPEC §13, operations.md "Placement", client.md "Clusters"):
// etcd unreachable -> no set delivers; brokers keep storing sends of placed queues; delivery
// resumes with the elections; nothing lost; a queue not placed yet is refused E_NO_PLACEMENT
// (at once once the broker read the map, within about 2 s when etcd was out of reach since start).
// Part A: etcd killed -9 for 12 s under traffic on 4 placed queues over 2 sets, then restarted.
// Part B: brokers started with etcd down; a send / a subscription to an unplaced queue; then etcd starts.
// Usage: nice -n 10 node test/attacks-31/attack4-etcd.mjs
import { startEtcd, startCluster, mkClient, tracker, sleep, load, waitMaster, freePort } from './lib.mjs';

const broken = [];
async function timed(p) { const t0 = Date.now(); try { await p; return { code: 'OK', ms: Date.now() - t0 }; } catch (e) { return { code: e.code, ms: Date.now() - t0 }; } }
async function withTimeout(p, ms) { return Promise.race([p, sleep(ms).then(() => { throw Object.assign(new Error('hang'), { code: `HANG>${ms}ms` }); })]); }

// ---------- Part A
{
  const queues = ['qa0', 'qa1', 'qb0', 'qb1'];
  const channels = Object.fromEntries(queues.map((q) => [`${q}/v1`, { set: q[1], prefetch: 10 }]));
  const etcd = await startEtcd(); await etcd.start();
  const nodes = await startCluster(etcd.url, { a: ['a1', 'a2'], b: ['b1', 'b2'] }, () => ({ channels }));
  await waitMaster(nodes, 'a'); await waitMaster(nodes, 'b');
  const hosts = nodes.filter((n) => n.set === 'a').map((n) => n.spec);
  const cons = await mkClient('cons', hosts); const prod = await mkClient('prod', hosts);
  const tr = tracker(); const deliv = [];
  for (const q of queues) await cons.consume(`${q}/v1/*`, { prefetch: 10 }, (err, m, done) => { if (err) return; tr.add({ id: `${q}-${m.id}`, seq: m.seq }); deliv.push({ t: Date.now(), set: q[1] }); done(); }).ready;
  const ok = new Set(); const fails = {}; let sent = 0, pending = 0, producing = true; const seqs = {};
  const producer = (async () => { const t0 = Date.now();
    while (producing) { const due = Math.floor(((Date.now() - t0) / 1000) * 300);
      while (sent < due) { const q = queues[sent % 4]; const id = Math.floor(sent / 4) % 3; const k = `${q}-${id}`; const s = (seqs[k] = (seqs[k] ?? -1) + 1); sent++; pending++;
        prod.send(`${q}/v1/${id}`, { id, seq: s }).then(() => ok.add(`${k}:${s}`), (e) => { fails[e.code] = (fails[e.code] ?? 0) + 1; }).finally(() => pending--); }
      await sleep(10); } })();
  await sleep(4000);
  const tDown = Date.now(); await etcd.kill(); console.log(`A: etcd killed -9; ${load()}`);
  await sleep(3000);
  const unplaced = await timed(withTimeout(prod.send('fresh/v1/x', { id: 0, seq: 0 }), 35000));
  let subErr = null; const hs = cons.consume('fresh2/v1/*', (err) => { if (err) subErr = err.code; });
  const subReady = await timed(withTimeout(hs.ready, 35000));
  console.log(`A: send to unplaced queue while etcd down: ${unplaced.code} in ${unplaced.ms} ms; subscribe: ready ${subReady.code} in ${subReady.ms} ms, handler err ${subErr}`);
  await sleep(Math.max(0, 12000 - (Date.now() - tDown)));
  const tUp = Date.now(); await etcd.start(); console.log(`A: etcd back after ${tUp - tDown} ms`);
  const during = deliv.filter((d) => d.t > tDown + 1500 && d.t < tUp);
  await sleep(4000); producing = false; await producer;
  const end = Date.now() + 60000; while (pending > 0 && Date.now() < end) await sleep(100);
  while ([...ok].some((k) => !tr.seen.has(k)) && Date.now() < end) await sleep(250);
  const lost = [...ok].filter((k) => !tr.seen.has(k)).length;
  const lastBefore = deliv.filter((d) => d.t < tUp).at(-1);
  const firstAfter = deliv.find((d) => d.t >= tUp);
  const res = { sent, answeredOk: ok.size, sendFailures: fails, lost, dups: tr.dups, orderBreaks: tr.breaks, deliveredWhileDown: during.length, lastDeliveryAfterKillMs: lastBefore ? lastBefore.t - tDown : null, firstDeliveryAfterEtcdBackMs: firstAfter ? firstAfter.t - tUp : null, unplacedSend: unplaced, unplacedSubscribe: { ready: subReady, handlerErr: subErr }, load: load() };
  console.log('A:', JSON.stringify(res));
  if (lost) broken.push(`A: ${lost} answered sends lost`);
  if (during.length) broken.push(`A: ${during.length} deliveries while etcd was down (past 1.5 s)`);
  if (unplaced.code !== 'E_NO_PLACEMENT' || unplaced.ms > 5000) broken.push(`A: unplaced send ${unplaced.code} in ${unplaced.ms} ms`);
  if (subReady.code !== 'E_NO_PLACEMENT' && subErr !== 'E_NO_PLACEMENT') broken.push(`A: unplaced subscribe ready ${subReady.code} err ${subErr}`);
  await cons.disconnect(); await prod.disconnect();
  for (const n of nodes) n.child.kill('SIGKILL');
  await etcd.kill();
}
// ---------- Part B
{
  const url = `http://127.0.0.1:${await freePort()}`;
  const etcd = await startEtcd(url); await etcd.start();
  const nodes = await startCluster(url, { a: ['a1'], b: ['b1'] });
  await waitMaster(nodes, 'a'); await waitMaster(nodes, 'b');
  const hosts = [nodes[0].spec];
  // bind the names while etcd is up (a new name with etcd down is E_AUTH timeout, as documented)
  for (const name of ['prod', 'cons']) await (await mkClient(name, hosts)).disconnect();
  for (const n of nodes) n.child.kill('SIGKILL');
  await etcd.kill(); await sleep(500);
  const { startNode } = await import('./lib.mjs');
  await Promise.all(nodes.map(startNode)); // brokers start with etcd down
  await sleep(1000);
  const newName = await timed(mkClient('newname', hosts, { connectTimeout: 5000 }).then((c) => c.disconnect()));
  console.log(`B: connect() of a new name with etcd down: ${newName.code} in ${newName.ms} ms`);
  const prod = await mkClient('prod', hosts); const cons = await mkClient('cons', hosts);
  const got = []; let subErr = null;
  const h = cons.consume('late/v1/*', (err, m, done) => { if (err) { subErr = err.code; return; } got.push(Date.now()); done(); });
  const subReady = await timed(withTimeout(h.ready, 35000));
  const unplaced = await timed(withTimeout(prod.send('late/v1/x', { id: 0, seq: 0 }), 35000));
  console.log(`B: etcd never up: subscribe ready ${subReady.code} in ${subReady.ms} ms (err ${subErr}); send ${unplaced.code} in ${unplaced.ms} ms; delivered ${got.length}; ${load()}`);
  const masters = nodes.filter((n) => n.role === 'master').map((n) => n.id);
  const tUp = Date.now(); await etcd.start();
  await waitMaster(nodes, 'a', 30000).catch(() => null);
  const h2 = cons.consume('late2/v1/*', (err, m, done) => { if (!err) { got.push(Date.now()); done(); } }); const r2 = await timed(withTimeout(h2.ready, 35000));
  const after = await timed(withTimeout(prod.send('late2/v1/x', { id: 0, seq: 0 }), 35000));
  const e = Date.now() + 20000; while (!got.length && Date.now() < e) await sleep(100);
  console.log(`B: after etcd started: subscribe ${r2.code}, send ${after.code} in ${after.ms} ms, delivered ${got.length} (${got.length ? got[0] - tUp : '-'} ms after etcd start); masters while down: [${masters}]`);
  if (unplaced.code !== 'E_NO_PLACEMENT' || unplaced.ms > 5000) broken.push(`B: unplaced send ${unplaced.code} in ${unplaced.ms} ms`);
  if (masters.length) broken.push(`B: master(s) while etcd down: ${masters}`);
  if (after.code !== 'OK' || !got.length) broken.push(`B: after etcd up: send ${after.code}, delivered ${got.length}`);
}
console.log(broken.length ? `BROKEN: ${broken.join('; ')}` : 'HELD');
process.exit(broken.length ? 1 : 0);
