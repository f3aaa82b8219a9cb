/* eslint-disable @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 28), kept as written and run */
// Item 2: another name tries a reserved id continuously during broker restarts. Which restarts let it in?
import { makeNodes, start, cli, mkClient, keyPair, sleep, check, waitFor, cleanup, kill9, stop, startEtcd, health } from './harness.mjs';
const ELECTION = process.argv[2] === 'election';
const etcd = ELECTION ? await startEtcd() : null;
const rules = [{ client: 'easilys-*', read: ['!invoice/*'] }, { client: 'other-*', read: ['!invoice/*'] }, { client: 'billing', write: ['invoice/*'] }];
const nodes = await makeNodes(ELECTION ? ['a', 'b', 'c'] : ['a', 'b'], { rules, ...(ELECTION ? { election: { etcd: { hosts: [etcd.url] }, prefix: '/atk28r/' + Date.now(), leaseTtl: 2 } } : {}) });
for (const n of nodes) await start(n);
await sleep(ELECTION ? 5000 : 1500);
const got = [], gotO = [];
const e1 = await mkClient(nodes, 'easilys-a', keyPair());
await e1.listen('invoice/v1/42', (err, msg) => { if (!err) got.push(msg); }).ready;
let phase = 'steady';
const oks = [];
let stopTrying = false;
const o = await mkClient(nodes, 'other-x', keyPair());
const trier = (async () => { while (!stopTrying) { const ph = phase; const h = o.listen('invoice/v1/42', (err, msg) => { if (!err) gotO.push(msg); }); const r = await Promise.race([h.ready.then(() => 'ok', () => 'no'), sleep(3000).then(() => 'pending')]); if (r === 'ok') { oks.push({ ph, phNow: phase, roles: await Promise.all(nodes.map(async (n) => n.id + ':' + ((await health(n)).body?.role ?? 'down'))) }); } await h.close().catch(() => {}); await sleep(200); } })();
const billing = await mkClient(nodes, 'billing', keyPair(), { sendTimeout: 15000 });
for (const n of nodes) {
  phase = 'sigterm ' + n.id; await stop(n); await sleep(1000); phase = 'start ' + n.id; await start(n); await sleep(3000);
  billing.send('invoice/v1/42', 'after-' + phase).catch(() => {});
}
for (const n of nodes) {
  phase = 'kill9 ' + n.id; await kill9(n); await sleep(1000); phase = 'start9 ' + n.id; await start(n); await sleep(3000);
  billing.send('invoice/v1/42', 'after-' + phase).catch(() => {});
}
phase = 'end'; await sleep(2000);
stopTrying = true; await trier;
console.log('oks', JSON.stringify(oks, null, 0)); console.log('gotO', gotO, 'got', got);
check(`${ELECTION ? 'election' : 'static'}: other name never accepted during restarts`, oks.length === 0 && gotO.length === 0, { oks: oks.length, gotO });
await cleanup(); process.exit(0);
