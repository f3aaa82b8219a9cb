// B3 (README) in a small election cluster: a, b, c + etcd (leaseTtl 2), one producer every 2 ms to all (sendTimeout
// 1.5 s), a listener. etcd is stopped (no broker delivers), the master is killed -9 and restarted while etcd is still
// down, so the sends of the window end E_NO_MASTER with storedBy (the two others); then etcd is back and someone is
// elected while the producer goes on. Promises: SPEC §7 "the sends of one connection are accepted in the order sent ...;
// first deliveries of one id leave in acceptance order"; operations.md#history-catch-up "Across failovers the brokers keep
// the same records, each connection's in the order it sent them (SPEC §7)". Reports who was elected (the restarted
// master lacks the window's sends and gets them from its slaves' offers; another one stored them itself). FORCE=1 makes
// the restarted master the one elected (the two others SIGSTOPped while etcd comes back, SIGCONT once it is master).
import { makeNodes, start, kill9, health, mkClient, keyPair, sleep, port, check, finish, startEtcdAt, electionBlock, waitFor, writeConfig } from './harness.mjs';
import { execFileSync } from 'node:child_process';

const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up());
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const CH = 'rt/v1/x';
const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(etcd.url, '/atk27d/d10-' + process.pid, 2), heartbeatTimeout: 2, logLevel: 'info',
  channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 100000 } } });
for (const n of nodes) { n.config.isMaster = true; writeConfig(n); }
await Promise.all(nodes.map(start));
const masterOf = async () => { for (const n of nodes) if ((await health(n)).body?.role === 'master') return n; return null; };
const m0 = await waitFor(masterOf, 30000, 100);
await sleep(2000);
const firsts = []; const seen = new Set();
const L = await mkClient(nodes, 'd10-l', keyPair(), { sendTimeout: 5000 });
await L.listen(CH, (err, m) => { if (!err && m && !seen.has(m.n)) { seen.add(m.n); firsts.push(m.n); } }).ready;
const P = await mkClient(nodes, 'd10-p', keyPair(), { sendTimeout: 1500 });
const res = []; const pend = []; let run = true;
const loop = (async () => { let n = 0; while (run) { const j = n++; pend.push(new Promise((r) => P.send(CH, { n: j }, (err) => { res[j] = err ? `${err.code}:${(err.info?.storedBy ?? []).join('')}` : 'OK'; r(); }))); await sleep(2); } })();
await sleep(2000);
await etcd.stop(); await sleep(500);
await kill9(m0); await sleep(3000); await start(m0); await sleep(1500);
// FORCE=1: the two others are SIGSTOPped while etcd comes back, so the restarted master is the one elected (as in c3x)
const others = nodes.filter((n) => n !== m0);
if (process.env.FORCE) for (const n of others) n.proc.kill('SIGSTOP');
await etcd.start();
if (process.env.FORCE) { await waitFor(async () => (await health(m0)).body?.role === 'master', 30000, 100); for (const n of others) n.proc.kill('SIGCONT'); }
const m1 = await waitFor(masterOf, 30000, 100);
await sleep(6000);
run = false; await loop; await Promise.all(pend);
const want = res.map((x, i) => [x, i]).filter(([x]) => x === 'OK' || /^[A-Z_]+:.+/.test(x)).map(([, i]) => i);
await waitFor(() => want.every((i) => seen.has(i)), 20000, 200);
await sleep(1000);
async function replayFrom(n) { const c = await mkClient([n], `d10-r-${n.id}`, keyPair()); const out = []; try { for await (const m of c.replay(CH, {})) out.push(m.data.n); } catch (e) { out.error = e.code; } await c.disconnect(); return out; }
function breaks(seq) { let max = -1; const br = { noMaster: 0, ok: 0, ex: null }; for (const n of seq) { if (n < max) { if (res[n] === 'OK') br.ok++; else br.noMaster++; br.ex ??= `${n} (${res[n]}) after ${max} (${res[max]})`; } max = Math.max(max, n); } return br; }
const reps = {}; for (const n of nodes) reps[n.id] = await replayFrom(n);
const tally = {}; for (const x of res) tally[x] = (tally[x] ?? 0) + 1;
const out = { listener: breaks(firsts) }; for (const n of nodes) out[n.id] = breaks(reps[n.id]);
const total = Object.values(out).reduce((s, b) => s + b.ok + b.noMaster, 0);
check(`d10 sends across etcd down + the master (${m0.id}) killed -9 and restarted, then ${m1?.id} elected: every history and the listener's first deliveries in send order per producer`,
  total === 0, { killedAndRestarted: m0.id, elected: m1?.id, answers: tally, listened: firsts.length, notListened: want.filter((i) => !seen.has(i)).length, replays: Object.fromEntries(nodes.map((n) => [n.id, reps[n.id].length])), outOfSendOrder: out });
console.log(up());
await P.disconnect(); await L.disconnect();
await finish(0);
