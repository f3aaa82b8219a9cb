 
// History order across configured-mode switches (no election). Docs: operations.md "Promotion is a config change",
// history catch-up ("a demoted master" is out of step; "What a mirror replays is then what its master replays, in the
// same order ... Nothing is missing or written twice"), configuration.md#retention (every send answered OK is in the
// history once), SPEC §7 (sends of one connection accepted in send order).
// Master a + mirror b, retained channel, PRODUCERS client instances pipelining to both, one listener. Per round:
// (1) the master demoted by reload (isMaster false) while traffic flows, the slave promoted by reload GAP ms later;
// (2) the new master killed -9, the other promoted by reload, the dead one restarted as slave. Replay from both brokers.
import { makeNodes, start, kill9, cli, health, mkClient, keyPair, sleep, check, finish, waitFor, writeConfig } from './harness.mjs';
import { execFileSync } from 'node:child_process';
const ROUNDS = Number(process.env.ROUNDS ?? 3), PRODUCERS = Number(process.env.PRODUCERS ?? 3), GAP = Number(process.env.GAP ?? 300);
const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up(), { ROUNDS, PRODUCERS, GAP });
const CH = 'rm/v1/x';
const nodes = await makeNodes(['a', 'b'], { heartbeatTimeout: 2, logLevel: 'info', channels: { 'rm/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 100000 } } });
await Promise.all(nodes.map(start));
await waitFor(async () => (await health(nodes[1])).status === 200, 30000, 200);
const T0 = Date.now(); const ts = () => ((Date.now() - T0) / 1000).toFixed(1);
const lst = await mkClient(nodes, 'lst-b3', keyPair(), { sendTimeout: 30000 });
const delivered = new Map(); const hl = lst.listen(CH, (err, msg) => { if (!err && msg) { const k = `${msg.k}:${msg.i}`; delivered.set(k, (delivered.get(k) ?? 0) + 1); } }); await hl.ready;
const prods = []; for (let k = 0; k < PRODUCERS; k++) prods.push(await mkClient(nodes, 'p-b3-' + k, keyPair(), { sendTimeout: 30000, maxBufferedMessages: 100000 }));
const res = prods.map(() => []); let run = true; const pend = [];
const loops = prods.map((p, k) => (async () => { let i = 0; while (run) { for (let b = 0; b < 2; b++) { const j = i++;
  pend.push(new Promise((r) => p.send(CH, { k, i: j }, (err) => { res[k][j] = err ? `${err.code}:${(err.info?.storedBy ?? []).length ? 'stored' : 'unstored'}` : 'OK'; r(); }))); } await sleep(10); } })());
const log = []; const note = (s) => { const l = `t+${ts()} [sent ${res.map((r) => r.length).join('/')}] ${s}`; log.push(l); console.log(l); };
const setMaster = async (n, v) => { n.config.isMaster = v; writeConfig(n); const o = await cli(n, 'reload'); note(`reload ${n.id} isMaster ${v}: rc ${o.code}`); };
let [m, s] = nodes;
await sleep(3000);
for (let r = 0; r < ROUNDS; r++) {
  await setMaster(m, false); await sleep(GAP); await setMaster(s, true); [m, s] = [s, m]; await sleep(3000);
  note(`kill -9 master ${m.id}`); await kill9(m); await sleep(300); await setMaster(s, true); m.config.isMaster = false; writeConfig(m); await sleep(1000); await start(m); note(`${m.id} restarted as slave`); [m, s] = [s, m]; await sleep(3000);
}
run = false; await Promise.all(loops); await Promise.all(pend); note('every send answered');
await waitFor(async () => (await Promise.all(nodes.map(health))).every((h) => h.status === 200), 60000, 500);
await sleep(5000);
const okKeys = new Set(); const tally = {};
res.forEach((rs, k) => rs.forEach((v, i) => { tally[v] = (tally[v] ?? 0) + 1; if (v === 'OK') okKeys.add(`${k}:${i}`); }));
const reps = {};
for (const n of nodes) { const c = await mkClient([n], 'rp-b3-' + n.id, keyPair(), { sendTimeout: 20000 }); const seq = []; try { for await (const x of c.replay(CH, {})) seq.push(`${x.data.k}:${x.data.i}`); } catch (e) { seq.err = e.code; } await c.disconnect(); reps[n.id] = seq; }
console.log('faults:', log.join(' | ')); console.log(up());
for (const n of nodes) { const seq = reps[n.id]; const sc = new Map(); for (const x of seq) sc.set(x, (sc.get(x) ?? 0) + 1); const last = {}; let brk = 0; const ex = [];
  for (const x of seq) { if (!okKeys.has(x)) continue; const [k, i] = x.split(':').map(Number); if (last[k] !== undefined && i < last[k]) { brk++; if (ex.length < 3) ex.push(`${x} after ${k}:${last[k]}`); } last[k] = Math.max(last[k] ?? -1, i); }
  check(`b3 replay from ${n.id}: every OK send once, in send order per producer`, !seq.err && [...okKeys].every((k) => sc.get(k) === 1) && brk === 0,
    { answers: tally, records: seq.length, missingOk: [...okKeys].filter((k) => !sc.has(k)).length, twice: [...sc.values()].filter((v) => v > 1).length, breaks: brk, ex, err: seq.err }); }
const [ra, rb] = [reps.a, reps.b]; let first = -1; for (let x = 0; x < Math.max(ra.length, rb.length); x++) if (ra[x] !== rb[x]) { first = x; break; }
check('b3 both brokers replay the same sequence (operations.md#history-catch-up wording "in the same order"; client.md promises only one producer order)', first === -1, { lenA: ra.length, lenB: rb.length, firstDiffAt: first, a: ra.slice(first, first + 3), b: rb.slice(first, first + 3) });
const lost = [...okKeys].filter((k) => !delivered.has(k)).length;
check('b3 listener: every OK send delivered [twice: info, bound = in flight per failover]', lost === 0, { ok: okKeys.size, lost, twice: [...delivered.values()].filter((v) => v > 1).length });
for (const p of [...prods, lst]) await p.disconnect();
await finish(0);
