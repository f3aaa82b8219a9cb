// atk27c copy of test/attacks-27b/b1-retained-failover.mjs: the same run, and it names the OK sends the listener never got
// (producer:index, the send's time t+s and the answer's time) and the faults around them.
// Issue 27 items 3, 4 and the history order across failovers. Docs: configuration.md#retention ("every send answered OK
// is in the history once"), client.md#replay ("a promoted mirror replays the same history ... the same order for
// messages one producer sent one after the other"), operations.md#history-catch-up ("What a mirror replays is then what
// its master replays, in the same order ... Nothing is missing or written twice"), SPEC §7 (sends of one connection
// accepted in the order sent, pipelined or not, retained or not).
// Election cluster a,b,c + one etcd (leaseTtl 2), a retained channel rt/v1, PRODUCERS client instances pipelining
// BURST sends every 10 ms to every broker, one listener. Faults per round (ROUNDS): step-down, reload of the master,
// kill -9 of the master, SIGSTOP of the master past its lease, the newly elected master killed -9 at once, kill -9 of a
// slave. At the end: replay rt/v1/x from EVERY broker (a client connected to it alone) and check.
import { makeNodes, start, kill9, cli, health, mkClient, keyPair, sleep, port, check, finish, startEtcdAt, electionBlock, waitFor, writeConfig } from './harness.mjs';
import { execFileSync } from 'node:child_process';

const ROUNDS = Number(process.env.ROUNDS ?? 2), PRODUCERS = Number(process.env.PRODUCERS ?? 3), BURST = Number(process.env.BURST ?? 2);
const STOP_MS = Number(process.env.STOP_MS ?? 4000);
const ONLY = (process.env.FAULTS ?? 'stepdown,reload,kill,stop,killnew,killslave').split(',');
const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up(), { ROUNDS, PRODUCERS, BURST, ONLY });
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const CH = 'rt/v1/x';
const nodes = await makeNodes((process.env.NODES ?? 'a,b,c').split(','), { election: electionBlock(etcd.url, '/atk27b/b1-' + process.pid, 2), heartbeatTimeout: 2,
  logLevel: 'info', channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 100000 } } });
await Promise.all(nodes.map(start));
const T0 = Date.now(); const ts = () => ((Date.now() - T0) / 1000).toFixed(1);
const roleOf = async (n) => (n.proc && n.proc.exitCode === null && !n.stopped ? (await health(n)).body?.role : 'down');
const master = async () => { for (const n of nodes) if ((await roleOf(n)) === 'master') return n; return null; };
if (!await waitFor(master, 60000, 200)) { check('b1 setup: a master elected', false); await finish(1); }

// listener (first deliveries)
const lst = await mkClient(nodes, 'lst-b1', keyPair(), { sendTimeout: 20000 });
const delivered = new Map();
const lastDl = {}; let dlBreaks = 0; const dlEx = [];
const hl = lst.listen(CH, (err, msg) => { if (!err && msg) { const k = `${msg.k}:${msg.i}`; if (!delivered.has(k)) { if (lastDl[msg.k] !== undefined && msg.i < lastDl[msg.k]) { dlBreaks++; if (dlEx.length < 3) dlEx.push(`${k} after ${msg.k}:${lastDl[msg.k]}`); } lastDl[msg.k] = Math.max(lastDl[msg.k] ?? -1, msg.i); } delivered.set(k, (delivered.get(k) ?? 0) + 1); } });
await hl.ready;
// producers: pipelined, answers recorded per send
const prods = []; for (let k = 0; k < PRODUCERS; k++) prods.push(await mkClient(nodes, 'p-b1-' + k, keyPair(), { sendTimeout: 20000, maxBufferedMessages: 100000 }));
const res = prods.map(() => []); const ids = prods.map(() => []); const tSent = prods.map(() => []); const tAns = prods.map(() => []); let run = true; const pending = [];
const loops = prods.map((p, k) => (async () => { let i = 0; while (run) { for (let b = 0; b < BURST; b++) { const j = i++; res[k][j] = undefined; tSent[k][j] = ts();
  pending.push(new Promise((r) => p.send(CH, { k, i: j }, (err, _n, info) => { ids[k][j] = info?.messageId ?? err?.info?.messageId; tAns[k][j] = ts(); res[k][j] = err ? `${err.code}:${(err.info?.storedBy ?? []).length ? 'stored' : 'unstored'}` : 'OK'; r(); }))); }
  await sleep(10); } })());

const log = [];
const note = (s) => { const l = `t+${ts()} [sent ${res.map((r) => r.length).join('/')}] ${s}`; log.push(l); console.log(l); };
const waitMaster = async (ms = 30000, not) => waitFor(async () => { const m = await master(); return m && m !== not ? m : null; }, ms, 50);
await sleep(3000);
for (let r = 0; r < ROUNDS; r++) {
  let m;
  if (ONLY.includes('stepdown')) { m = await waitMaster(); note(`step-down ${m?.id}`); if (m) { const o = await cli(m, 'step-down'); note(`step-down rc ${o.code}: ${o.out.trim().split('\n').at(-1)?.slice(0, 100)}`); } await sleep(3000); }
  if (ONLY.includes('reload')) { m = await waitMaster(); if (m) { m.config.logLevel = m.config.logLevel === 'info' ? 'warn' : 'info'; writeConfig(m); const o = await cli(m, 'reload'); note(`reload ${m.id} rc ${o.code}`); } await sleep(2000); }
  if (ONLY.includes('kill')) { m = await waitMaster(); if (m) { note(`kill -9 master ${m.id}`); await kill9(m); await sleep(1500); await start(m); note(`${m.id} restarted`); } await sleep(3000); }
  if (ONLY.includes('stop')) { m = await waitMaster(); if (m) { note(`SIGSTOP master ${m.id} ${STOP_MS} ms`); m.proc.kill('SIGSTOP'); m.stopped = true; await sleep(STOP_MS); m.proc.kill('SIGCONT'); m.stopped = false; note(`SIGCONT ${m.id}`); } await sleep(3000); }
  if (ONLY.includes('killnew')) {
    m = await waitMaster(); if (m) { note(`kill -9 master ${m.id} (to kill its successor at once)`); await kill9(m);
      const nm = await waitMaster(30000, m); if (nm) { await kill9(nm); note(`kill -9 newly elected ${nm.id}`); }
      await sleep(1000); await start(m); note(`${m.id} restarted`); if (nm) { await sleep(500); await start(nm); note(`${nm.id} restarted`); } }
    await sleep(4000);
  }
  if (ONLY.includes('killslave')) { m = await waitMaster(); const s = nodes.find((n) => n !== m); note(`kill -9 slave ${s.id}`); await kill9(s); await sleep(1000); await start(s); note(`${s.id} restarted`); await sleep(4000); }
}
run = false; await Promise.all(loops); note('producers stopped'); await Promise.all(pending); note('every send answered');
// settle: one master, every broker 200
const settled = await waitFor(async () => { const hs = await Promise.all(nodes.map(health)); return hs.filter((h) => h.body?.role === 'master').length === 1 && hs.every((h) => h.status === 200) ? hs : null; }, 120000, 500);
note(`settled: ${settled ? 'yes' : 'NO ' + JSON.stringify((await Promise.all(nodes.map(health))).map((h) => [h.status, h.body?.role, h.body?.reason]))}`);
await sleep(5000);
const okKeys = new Set(); const tally = {};
res.forEach((rs, k) => rs.forEach((v, i) => { tally[v ?? 'none'] = (tally[v ?? 'none'] ?? 0) + 1; if (v === 'OK') okKeys.add(`${k}:${i}`); }));
async function replayFrom(n) {
  const c = await mkClient([n], 'rp-b1-' + n.id + '-' + Date.now() % 100000, keyPair(), { sendTimeout: 20000 });
  const out = []; try { for await (const msg of c.replay(CH, {})) out.push(`${msg.data.k}:${msg.data.i}`); } catch (e) { out.error = e.code + ' ' + e.message; }
  await c.disconnect(); return out;
}
function judge(seq) {
  const count = new Map(); for (const x of seq) count.set(x, (count.get(x) ?? 0) + 1);
  const missing = [...okKeys].filter((x) => !count.has(x)); const twice = [...count].filter(([, v]) => v > 1).map(([x]) => x);
  const last = {}, lastOk = {}; let breaks = 0, okBreaks = 0; const ex = [];
  for (const x of seq) { const [k, i] = x.split(':').map(Number);
    if (last[k] !== undefined && i < last[k]) { breaks++; }
    if (okKeys.has(x)) { if (lastOk[k] !== undefined && i < lastOk[k]) { okBreaks++; if (ex.length < 3) ex.push(`${x} after ${k}:${lastOk[k]}`); } lastOk[k] = Math.max(lastOk[k] ?? -1, i); }
    last[k] = Math.max(last[k] ?? -1, i); }
  return { records: seq.length, missing: missing.length, missEx: missing.slice(0, 5), twice: twice.length, twiceEx: twice.slice(0, 3), okOrderBreaks: okBreaks, allOrderBreaks: breaks, ex, error: seq.error };
}
let reps = {}; for (const n of nodes) reps[n.id] = await replayFrom(n);
let verdict = Object.fromEntries(nodes.map((n) => [n.id, judge(reps[n.id])]));
const bad = (v) => v.missing || v.twice || v.okOrderBreaks || v.error;
if (Object.values(verdict).some(bad)) { note('a replay was short: replaying again after 35 s (held records bound: 30 s)'); await sleep(35000);
  const reps2 = {}; for (const n of nodes) reps2[n.id] = await replayFrom(n);
  console.log('first replays (5 s after settled):', Object.entries(verdict).map(([id, v]) => `${id}: ${v.records} records, missing ${v.missing}, twice ${v.twice}, breaks ${v.okOrderBreaks}`).join('; ')); reps = reps2; verdict = Object.fromEntries(nodes.map((n) => [n.id, judge(reps[n.id])])); }
const sent = res.reduce((a, r) => a + r.length, 0);
// unlike b1: wait for the listener to get everything, or to make no progress for 20 s (a lagging listener is not a loss)
{ let lastN = -1, lastT = Date.now(); await waitFor(() => { if (delivered.size !== lastN) { lastN = delivered.size; lastT = Date.now(); } return [...okKeys].every((x) => delivered.has(x)) || Date.now() - lastT > 20000; }, 180000, 500);
  console.log(`listener waited: ${delivered.size} distinct delivered, last progress ${((Date.now() - lastT) / 1000).toFixed(0)} s ago`); }
const lostKeys = [...okKeys].filter((x) => !delivered.has(x)); const lost = lostKeys.length;
if (lost) { const byP = {}; for (const x of lostKeys) { const [k, i] = x.split(':').map(Number); (byP[k] ??= []).push(i); }
  for (const [k, is] of Object.entries(byP)) { is.sort((x, y) => x - y); console.log(`listener never got producer ${k}: ${is.length} sends, ids ${is[0]}..${is.at(-1)} (${is.slice(0, 12).join(',')}${is.length > 12 ? ',...' : ''}), sent t+${tSent[k][is[0]]}..t+${tSent[k][is.at(-1)]}, answered t+${tAns[k][is[0]]}..t+${tAns[k][is.at(-1)]}`); } }
console.log('faults:', log.join(' | '));
for (const n of nodes) { const w = (n.log.match(/[^\n]*written where they arrived[^\n]*/g) ?? []).map((l) => (l.match(/"records":(\d+)/) ?? [])[1] + ' at ' + ((l.match(/"time":"[^"]*T([^"]*)"/) ?? [])[1] ?? '') + ' ' + ((l.match(/"reason":"([^"]*)"/) ?? [])[1] ?? '')); if (w.length) console.log(`${n.id}: warn 'history records of clients' copies written where they arrived' records/time:`, w.join(', ')); }
console.log(up());
for (const n of nodes) check(`b1 replay from ${n.id}: every OK send once, each producer's OK records in send order`, !bad(verdict[n.id]), { sent, answers: tally, ...verdict[n.id] });
const [ra, ...rest] = nodes.map((n) => reps[n.id]);
const diffs = rest.map((rb, j) => { let first = -1; for (let x = 0; x < Math.max(ra.length, rb.length); x++) if (ra[x] !== rb[x]) { first = x; break; } return { vs: nodes[j + 1].id, lenA: ra.length, lenB: rb.length, firstDiffAt: first, a: ra.slice(first, first + 3), b: rb.slice(first, first + 3) }; });
check('b1 the brokers replay the same sequence (operations.md#history-catch-up wording "in the same order"; client.md promises only one producer order)', diffs.every((d) => d.firstDiffAt === -1), diffs);
check('b1 [info] listener: every OK send delivered; first deliveries per producer in send order (SPEC §7)', lost === 0 && dlBreaks === 0, { ok: okKeys.size, notDelivered: lost, twiceDelivered: [...delivered.values()].filter((v) => v > 1).length, firstDeliveryOrderBreaks: dlBreaks, ex: dlEx });
if (process.env.KEEP_LOGS) { const { mkdirSync, writeFileSync } = await import('node:fs'); mkdirSync(process.env.KEEP_LOGS, { recursive: true });
  for (const n of nodes) writeFileSync(`${process.env.KEEP_LOGS}/${n.id}.log`, n.log); for (const n of nodes) writeFileSync(`${process.env.KEEP_LOGS}/${n.id}.replay`, reps[n.id].join('\n')); }
for (const p of prods) await p.disconnect(); await lst.disconnect();
await finish(0);
