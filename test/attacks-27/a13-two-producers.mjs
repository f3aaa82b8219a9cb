/* eslint-disable no-undef, no-empty, @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27): Node 20 global fetch, best-effort cleanup, figures kept for reading */
// Follow-up of the nemesis (seed 9127, twice): one of two producers in one process had 3,253 (and 4,500) sends fail
// E_NO_MASTER with storedBy [] for ~90 s while the other's failures were stored by a slave. Docs: while no master
// delivers, "sends keep being stored by every broker and are answered E_NO_MASTER with info.storedBy".
// Election cluster a,b,c (leaseTtl 2), two client instances producing every 10 ms; faults: step-down, kill -9 of a
// slave, SIGSTOP of the master 3 s, etcd kill -9 for 5 s. Every send: OK, or E_NO_MASTER with storedBy not empty.
import { makeNodes, start, kill9, cli, health, mkClient, keyPair, sleep, port, check, finish, startEtcdAt, electionBlock, waitFor } from './harness.mjs';
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(etcd.url, '/atk27/a13-' + process.pid, 2), heartbeatTimeout: 2 });
await Promise.all(nodes.map(start));
const master = async () => { for (const n of nodes) if ((await health(n)).body?.role === 'master') return n; return null; };
await waitFor(master, 60000, 200);
const prods = [await mkClient(nodes, 'p13a', keyPair(), { sendTimeout: 15000 }), await mkClient(nodes, 'p13b', keyPair(), { sendTimeout: 15000 })];
const out = [[], []]; let run = true;
const loops = prods.map((p, k) => (async () => { let s = 0; while (run) { const i = s++; p.send('tp/v1/1', { k, i }).then(() => { out[k][i] = 'OK'; }, (e) => { out[k][i] = e.code + ((e.info?.storedBy ?? []).length ? ':stored' : ':unstored'); }); await sleep(10); } })());
const log = [];
await sleep(3000);
let m = await master(); log.push('step-down ' + m?.id); if (m) await cli(m, 'step-down'); await sleep(5000);
m = await waitFor(master, 20000, 200); const slave = nodes.find((n) => n !== m); log.push('kill -9 ' + slave.id); await kill9(slave); await sleep(1000); await start(slave); await sleep(4000);
m = await waitFor(master, 20000, 200); log.push('SIGSTOP ' + m?.id); if (m) { m.proc.kill('SIGSTOP'); await sleep(3000); m.proc.kill('SIGCONT'); } await sleep(5000);
log.push('etcd kill'); await etcd.stop(); await sleep(5000); await etcd.start(); await sleep(6000);
run = false; await Promise.all(loops); await sleep(16000);
const tally = out.map((o) => { const c = {}; for (const v of o) c[v ?? 'unanswered'] = (c[v ?? 'unanswered'] ?? 0) + 1; return c; });
const unstored = out.map((o) => o.filter((v) => v && v.endsWith(':unstored')).length);
check('13 two producers through step-down, kill -9, SIGSTOP, etcd outage: no send fails E_NO_MASTER unstored, none unanswered', unstored.every((u) => u === 0) && out.every((o) => o.every((v) => v)), { faults: log, p13a: tally[0], p13b: tally[1] });
for (const p of prods) await p.disconnect();
await finish(0);
