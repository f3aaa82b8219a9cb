// Attack 3b (minimal reproduction of what attack 3 found): a client given ONE broker, the SLAVE of
// set b, uses a queue placed on set b (its seed's own set). Promise (client.md "Clusters": "give
// hosts the brokers of one set (or a single broker) and use every queue of the cluster"; SPEC §13
// "A client may be given any brokers of the cluster ... connects to the brokers of the sets it uses").
// For comparison the same with the seed being set b's master, and a queue pinned to set a.
// Usage: nice -n 10 node test/attacks-31/attack3b-seed-slave-own-set.mjs
import { startEtcd, startCluster, mkClient, sleep, load, waitMaster } from './lib.mjs';

const etcd = await startEtcd(); await etcd.start();
const nodes = await startCluster(etcd.url, { a: ['a1', 'a2'], b: ['b1', 'b2'] }, () => ({ channels: { 'own/v1': { set: 'b' }, 'other/v1': { set: 'a' } } }));
await waitMaster(nodes, 'a'); const mb = await waitMaster(nodes, 'b');
const slave = nodes.find((n) => n.set === 'b' && n !== mb);
async function trial(name, seed, queue) {
  const mq = await mkClient(name, [seed.spec], { sendTimeout: 10000 });
  const got = []; let readyAt = null, readyErr = null; const t0 = Date.now();
  const h = mq.listen(`${queue}/x`, (err, m) => { if (!err) got.push(m); });
  h.ready.then(() => (readyAt = Date.now() - t0), (e) => (readyErr = e.code));
  while (readyAt === null && readyErr === null && Date.now() - t0 < 10000) await sleep(50);
  const s0 = Date.now(); const send = await mq.send(`${queue}/x`, { from: name }).then(() => 'OK', (e) => `${e.code} storedBy ${JSON.stringify(e.info?.storedBy)}`);
  const sendMs = Date.now() - s0;
  const w = Date.now(); while (!got.length && Date.now() - w < 5000) await sleep(50);
  const r = `seed ${seed.id} (${seed.role} of ${seed.set}), queue ${queue} (on ${queue.startsWith('own') ? 'b' : 'a'}): ready ${readyAt !== null ? `ok in ${readyAt} ms` : readyErr ?? 'NOT READY after 10 s'}; send ${send} in ${sendMs} ms; delivered ${got.length} ${JSON.stringify(got)}`;
  await sleep(1500);
  console.log(`${r}; after 1.5 s more: delivered ${got.length}`);
  const ok = readyAt !== null && send === 'OK' && got.filter((m) => m.from === name).length === 1; // c2 also hears c1's message stored on the slave earlier await mq.disconnect();
  return ok;
}
const r1 = await trial('c1', slave, 'own/v1');
const r2 = await trial('c2', mb, 'own/v1');
const r3 = await trial('c3', slave, 'other/v1');
console.log(load());
console.log(r1 && r2 && r3 ? 'HELD' : `BROKEN: seed=b's slave, queue on b: ${r1 ? 'ok' : 'fails'}; seed=b's master, queue on b: ${r2 ? 'ok' : 'fails'}; seed=b's slave, queue on a: ${r3 ? 'ok' : 'fails'}`);
process.exit(r1 && r2 && r3 ? 0 : 1);
