// Issue 27 item 1 with traffic: three election brokers (isMaster true in each file) started with etcd unreachable, a
// producer pipelining every 10 ms (sendTimeout 3 s), a consumer (prefetch 10) and a listener connected before; etcd
// started on that address after DOWN_MS (8000). Docs: operations.md#automatic-failover ("a broker is a slave from its
// first second until it holds the lease, whether etcd is up, slow or unreachable at start. Until then it settles no
// send and delivers nothing"; "no broker delivers while etcd is down"); lost 0 (E_NO_MASTER with storedBy is not lost).
import { makeNodes, start, health, mkClient, keyPair, sleep, port, check, finish, startEtcdAt, electionBlock, waitFor, writeConfig } from './harness.mjs';
import { execFileSync } from 'node:child_process';

const DOWN_MS = Number(process.env.DOWN_MS ?? 8000);
const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up(), { DOWN_MS });
const etcd = await startEtcdAt(await port(), await port());
const CH = 'jobs/v1/x';
const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(etcd.url, '/atk27c/c2-' + process.pid, 2), heartbeatTimeout: 2, logLevel: 'info' });
for (const n of nodes) { n.config.isMaster = true; writeConfig(n); }
const samples = []; let sampling = true;
const sampler = (async () => { while (sampling) { const t = Date.now(); const hs = await Promise.all(nodes.map(health)); samples.push({ t, roles: hs.map((h) => h.body?.role ?? 'none') }); await sleep(50); } })();
await Promise.all(nodes.map(start));
const tStart = Date.now();
const firsts = { cons: null, lis: null }; const seenC = new Map(), seenL = new Map();
const cc = await mkClient(nodes, 'c2-cons', keyPair(), { sendTimeout: 3000 });
const hc = cc.consume(CH, { prefetch: 10 }, (err, msg, done, info) => { if (err) return; firsts.cons ??= Date.now(); seenC.set(info.messageId, (seenC.get(info.messageId) ?? 0) + 1); setTimeout(() => done(), 10); });
const lc = await mkClient(nodes, 'c2-lst', keyPair(), { sendTimeout: 3000 });
const hl = lc.listen(CH, (err, msg, info) => { if (!err) { firsts.lis ??= Date.now(); seenL.set(info.messageId, (seenL.get(info.messageId) ?? 0) + 1); } });
hc.ready.catch(() => {}); hl.ready.catch(() => {});
const p = await mkClient(nodes, 'c2-p', keyPair(), { sendTimeout: 3000 });
const answers = []; const pending = []; let run = true;
const loop = (async () => { let i = 0; while (run) { const j = i++; pending.push(new Promise((r) => p.send(CH, { i: j }, (err, _n, info) => { answers.push({ id: info?.messageId ?? err?.info?.messageId, code: err ? err.code : 'OK', storedBy: (err?.info?.storedBy ?? []).join('') }); r(); }))); await sleep(10); } })();
await sleep(Math.max(0, DOWN_MS - (Date.now() - tStart)));
const deliveredDown = seenC.size + seenL.size; const answersDown = answers.length; const okDown = answers.filter((a) => a.code === 'OK').length;
const tUp = Date.now(); await etcd.start();
await waitFor(async () => { const s = samples.at(-1); return s.t > tUp && s.roles.filter((r) => r === 'master').length === 1; }, 30000, 50);
await sleep(5000);
run = false; await loop; await Promise.all(pending);
const tally = {}; for (const a of answers) { const k = a.code + (a.storedBy ? ':' + a.storedBy : ''); tally[k] = (tally[k] ?? 0) + 1; }
const want = answers.filter((a) => a.code === 'OK' || a.storedBy).map((a) => a.id);
await waitFor(() => want.every((id) => seenC.has(id) && seenL.has(id)), 30000, 250);
sampling = false; await sampler;
// when was each broker elected (its log), and the first master on /health
const elected = nodes.map((n) => { const l = (n.log.match(/[^\n]*elected master through etcd[^\n]*/g) ?? [])[0]; const t = l && (l.match(/"time":"([^"]*)"/) ?? [])[1]; return t ? { id: n.id, t: Date.parse(t) } : null; }).filter(Boolean).sort((x, y) => x.t - y.t);
const firstMasterSample = samples.find((s) => s.roles.includes('master'));
const mastersDuringDown = samples.filter((s) => s.t < tUp && s.roles.includes('master')).length;
const twoMasters = samples.filter((s) => s.roles.filter((r) => r === 'master').length > 1).length;
const firstDel = Math.min(firsts.cons ?? Infinity, firsts.lis ?? Infinity);
console.log(up());
check('c2 while etcd unreachable: no broker says master, nothing delivered, no send answered OK', mastersDuringDown === 0 && deliveredDown === 0 && okDown === 0,
  { samplesDown: samples.filter((s) => s.t < tUp).length, mastersDuringDown, deliveredDown, answersDown, okDown });
check('c2 nobody delivers until elected: first delivery after the first "elected master through etcd" log line', elected.length > 0 && firstDel >= elected[0].t,
  { etcdUpAt: 0, electedAt: elected.map((e) => `${e.id}+${e.t - tUp}ms`), firstMasterOnHealth: firstMasterSample ? firstMasterSample.t - tUp : null, firstDeliveryAt: firstDel - tUp, twoMasterSamples: twoMasters });
const twiceC = [...seenC.values()].filter((v) => v > 1).length, twiceL = [...seenL.values()].filter((v) => v > 1).length;
const lostC = want.filter((id) => !seenC.has(id)).length, lostL = want.filter((id) => !seenL.has(id)).length;
check('c2 after the election: every OK or storedBy send consumed and listened, once', lostC + lostL + twiceC + twiceL === 0, { answers: tally, lostC, lostL, twiceC, twiceL });
await p.disconnect(); await cc.disconnect(); await lc.disconnect();
await finish(0);
