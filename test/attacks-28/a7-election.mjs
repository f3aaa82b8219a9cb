// Items 1-2 with an election block (real etcd): failover keeps reservations; conflict while no master; rolling restart.
import { makeNodes, start, cli, mkClient, keyPair, sleep, check, waitFor, cleanup, kill9, stop, startEtcd, health, meshViaProxies } from './harness.mjs';
const etcd = await startEtcd();
const rules = [{ client: 'easilys-*', read: ['!invoice/*'] }, { client: 'other-*', read: ['!invoice/*'] }, { client: 'billing', write: ['invoice/*'] }, { client: 'dup*', read: ['x/*'] }];
const nodes = await makeNodes(['a', 'b', 'c'], { rules, election: { etcd: { hosts: [etcd.url] }, prefix: '/atk28/' + Date.now(), leaseTtl: 2 } });
const net = await meshViaProxies(nodes);
for (const n of nodes) await start(n);
const master = async () => { for (const n of nodes) { if (n.proc?.exitCode !== null) continue; const h = await health(n); if (h.body?.role === 'master') return n; } return null; };
let m = await waitFor(master, 15000);
console.log('elected', m?.id, JSON.stringify((await health(nodes[0])).body).slice(0, 300));
const kE = keyPair(), kO = keyPair();
const got = [], gotO = [];
const e1 = await mkClient(nodes, 'easilys-a', kE);
await e1.listen('invoice/v1/42', (err, msg) => { if (!err) got.push(msg); }).ready;
const billing = await mkClient(nodes, 'billing', keyPair(), { sendTimeout: 15000 });
await billing.send('invoice/v1/42', 'one');
// keep another name trying every 300 ms
let otherOk = 0, otherTries = 0, stopTrying = false;
const trier = (async () => { const o = await mkClient(nodes, 'other-x', kO); while (!stopTrying) { otherTries++; const h = o.listen('invoice/v1/42', (err, msg) => { if (!err) gotO.push(msg); }); const r = await Promise.race([h.ready.then(() => 'ok', () => 'no'), sleep(3000).then(() => 'pending')]); if (r === 'ok') { otherOk++; } await h.close().catch(() => {}); await sleep(300); } await o.disconnect(); })();
// failover: kill -9 the master
await kill9(m);
const old = m;
m = await waitFor(async () => { const x = await master(); return x && x !== old ? x : null; }, 20000);
console.log('new master', m?.id);
await billing.send('invoice/v1/42', 'two').catch((x) => console.log('send two', x.code));
await sleep(1500);
check('election failover: owner still receives', got.includes('two'), got);
console.log((await cli(m, 'reservations', 'list')).out);
// rolling restart of all brokers (including old)
await start(old); await sleep(2000);
for (const n of nodes) { await stop(n); await start(n); await sleep(2500); }
m = await waitFor(master, 20000);
await billing.send('invoice/v1/42', 'three').catch((x) => console.log('send three', x.code));
await sleep(1500);
stopTrying = true; await trier;
console.log('other tries', otherTries, 'ok', otherOk, 'gotO', gotO, 'got', got);
check('rolling restart + failover: other name never took the id', otherOk === 0 && gotO.length === 0, { otherTries, otherOk, gotO });
check('owner got three', got.includes('three'), got);
// conflict while no broker delivers: etcd down, links cut, two keys on b and c, heal
await etcd.stop(); await sleep(4000);
console.log('roles with etcd down', await Promise.all(nodes.map(async (n) => (await health(n)).body?.role)));
net.isolate('a'); net.cut('b', 'c'); await sleep(500);
const nodeB = nodes[1], nodeC = nodes[2];
const z1 = await mkClient([nodeB], 'dupz', keyPair()); const z2 = await mkClient([nodeC], 'dupz', keyPair());
console.log('registered two keys', z1.connected, z2.connected);
net.heal('b', 'c'); await sleep(2000);
const z3 = await mkClient([nodeB], 'dupz', keyPair());
const z4 = await mkClient([nodeC], 'dupz', keyPair());
console.log('conflict connects', JSON.stringify([z3.connected?.details, z4.connected?.details]), 'z1', JSON.stringify(z1.errors.map((x) => x.details)), 'z2', JSON.stringify(z2.errors.map((x) => x.details)));
check('no master: name bound two ways refused with conflict', z3.connected?.details?.reason === 'conflict' && z4.connected?.details?.reason === 'conflict');
net.rejoin('a'); await etcd.start();
m = await waitFor(master, 20000); console.log('master after etcd back', m?.id);
await sleep(3000);
const outs = await Promise.all(nodes.map((n) => cli(n, 'keys', 'list')));
const fps = outs.map((o) => (o.out.match(/^dupz\s+([0-9a-f]{64})/m) || [])[1]);
check('after etcd back: dupz settled alike', fps.every((f) => f && f === fps[0]), fps);
console.log('z1', JSON.stringify(z1.errors.map((x) => x.details)), 'z2', JSON.stringify(z2.errors.map((x) => x.details)));
await cleanup(); process.exit(0);
