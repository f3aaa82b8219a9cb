 
// operations.md#automatic-failover: "The whole [election] block needs a restart: a reload keeps the running one and says
// so (config keys changed that apply only after a restart, whisker reload prints it)"; "A reload never disturbs a
// session" (SPEC §9). Election cluster a,b,c; 2 pipelining producers on a retained channel; the master's file gets
// leaseTtl 2 -> 6, prefix changed, then isMaster false, each reloaded under traffic. Expected: reload says restart
// needed, the master keeps its role and epoch, no send fails, replay in order.
import { makeNodes, start, cli, health, mkClient, keyPair, sleep, port, check, finish, startEtcdAt, electionBlock, waitFor, writeConfig } from './harness.mjs';
import { execFileSync } from 'node:child_process';
console.log('start', new Date().toISOString(), execFileSync('uptime').toString().trim().replace(/.*load/, 'load'));
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const CH = 're/v1/x';
const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(etcd.url, '/atk27b/b7-' + process.pid, 2), heartbeatTimeout: 2, logLevel: 'info', channels: { 're/v1': { retention: { seconds: 3600 } } } });
await Promise.all(nodes.map(start));
const master = async () => { for (const n of nodes) { const h = await health(n); if (h.body?.role === 'master') return { n, epoch: h.body?.election?.epoch }; } return null; };
const m0 = await waitFor(master, 60000, 200);
const prods = [await mkClient(nodes, 'p-b7-0', keyPair(), { sendTimeout: 20000 }), await mkClient(nodes, 'p-b7-1', keyPair(), { sendTimeout: 20000 })];
const res = [[], []]; let go = true; const pend = [];
const loops = prods.map((p, k) => (async () => { let i = 0; while (go) { for (let b = 0; b < 2; b++) { const j = i++; pend.push(p.send(CH, { k, i: j }).then(() => { res[k][j] = 'OK'; }, (e) => { res[k][j] = e.code; })); } await sleep(10); } })());
await sleep(2000);
const outs = [];
const n = m0.n;
n.config.election = { ...n.config.election, leaseTtl: 6 }; writeConfig(n); outs.push(await cli(n, 'reload')); await sleep(1500);
n.config.election = { ...n.config.election, prefix: n.config.election.prefix + '-x' }; writeConfig(n); outs.push(await cli(n, 'reload')); await sleep(1500);
n.config.isMaster = false; writeConfig(n); outs.push(await cli(n, 'reload')); await sleep(2000);
const m1 = await master();
go = false; await Promise.all(loops); await Promise.all(pend);
const tally = {}; res.flat().forEach((v) => { tally[v] = (tally[v] ?? 0) + 1; });
check('b7 reloads of the election block on the master: each says a restart is needed (leaseTtl, prefix), role and epoch kept, every send OK',
  outs.slice(0, 2).every((o) => o.code === 0 && /restart/.test(o.out)) && m1?.n === n && m1?.epoch === m0.epoch && Object.keys(tally).join() === 'OK',
  { reloads: outs.map((o) => `${o.code}: ${o.out.trim().replace(/\s+/g, ' ').slice(0, 160)}`), before: `${m0.n.id}@${m0.epoch}`, after: `${m1?.n.id}@${m1?.epoch}`, answers: tally });
const c = await mkClient(nodes, 'r-b7', keyPair()); const seq = []; for await (const x of c.replay(CH, {})) seq.push(x.data);
const last = {}; let brk = 0; for (const d of seq) { if (last[d.k] !== undefined && d.i < last[d.k]) brk++; last[d.k] = Math.max(last[d.k] ?? -1, d.i); }
check('b7 replay after: every send once, in order', seq.length === res.flat().length && brk === 0, { records: seq.length, sent: res.flat().length, breaks: brk });
for (const p of [...prods, c]) await p.disconnect();
await finish(0);
