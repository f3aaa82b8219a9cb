// Third outside check of issue 31 (src/ not read): moves called off, lease losses mid-move, under ~1,000 msg/s.
// Two sets a, b of two brokers (harness ../attacks-31/lib.mjs: etcd 3.4, leaseTtl 2 s, requeueInterval 30 s),
// queue mv/v1 pinned to a, a producer (10 ids, per-id seq), a consumer (prefetch 10, 12 ms a message: slower
// than the sends, so a holds a backlog and acks are in flight) and a listener `lis`, clients given set a only.
// MODE:
//  calloff        : limits.maxMoveBytes 16 KiB on set a, `whisker move mv/v1 --to b`: called off, b hands back
//  calloff-kill-new : the same, b's master kill -9 as it logs `handing back`
//  calloff-stop-new : the same, b's master SIGSTOPped 3 s (past its 2 s lease) as it logs `handing back`
//  calloff-kill-old : the same, a's master kill -9 as it logs `move called off` (its slave takes the call-off up)
//  calloff-late   : the same, listener name `late` leaves before the move and listens again as b logs `handing back`
//  calloff-twice  : the same, then at once `whisker move --to b` again (called off again), then the queue drained
//  back-mid       : no bound; `whisker move --to a` while a->b runs (a logs `handing the queue over`), then b->a
//  stop-old-mid   : no bound; a's master SIGSTOPped 3 s as it logs `handing the queue over`
//  stop-new-mid   : no bound; b's master SIGSTOPped 3 s as it logs `hand-over taken` (before it ends the move)
//  calloff-stop-old : calloff, a's master SIGSTOPped 3 s as it logs `move called off: the queue holds more`
//  calloff-stop-back : calloff, a's master SIGSTOPped 3 s as it logs `the queue is on this set again` (delivering again)
//  stop-flap      : no move; a's master SIGSTOPped 3 s, then a's next master 3 s, then a's master again 1.2 s
//  calloff-kill-old-back : calloff, a's master kill -9 as it logs `sends taken meanwhile are back` (before it delivers again)
//  calloff-b-down : calloff, both brokers of b kill -9 as b's master logs `handing back`, restarted 4 s later
//  calloff-etcd-stop : calloff, etcd SIGSTOPped 4 s as b's master logs `handing back` (every lease runs out)
//  move-b-down    : no bound; both brokers of b kill -9 as b's master logs `taking the queue over`, restarted 4 s later
//                   (B_DOWN_AT=TEXT picks another log line of b's master for both b-down modes, B_DOWN_ON=a a line of
//                   a's master instead; KILL_DELAY_MS waits after it; B_STOPS: SIGSTOPs of b's brokers after the restart, see stopChain)
//  b-restart-after : control, no bound: the move ends, 1.5 s later both brokers of b kill -9, restarted 4 s later
//  stop-both-mid  : no bound; a's and b's masters SIGSTOPped 3 s together as a logs `handing the queue over`
//  a-restart-nomove : control, no move: both brokers of a kill -9 under traffic, restarted 4 s later
//  stop-traffic   : no move; a's master SIGSTOPped 3 s (past its lease) under traffic, then SIGCONT
// Promises: SPEC §13 (nothing lost, order per id kept, duplicates at most what was in flight), operations.md
// "Moving a queue" (call-off: order per id kept, nothing delivered on b, `whisker move` exit 1 `called off: it
// stays on a`), "Automatic failover" (a new master delivers within leaseTtl + about 1 s).
// REPLAY=1 (any mode): the channel retained on both sets, the whole history replayed at the end and checked.
// Usage: nice -n 5 node test/attacks-31c/calloff.mjs MODE
import { writeFileSync } from 'node:fs';
import { startEtcd, startCluster, startNode, mkClient, tracker, sleep, load, cliAsync, waitMaster, waitLog, kill9 } from '../attacks-31/lib.mjs';

const mode = process.argv[2] ?? 'calloff';
const calloff = mode.startsWith('calloff');
const RATE = 1000, IDS = 10, BEFORE_MS = 4000, AFTER_MS = 3000, PREFETCH = 10, HANDLER_MS = 12;
const etcd = await startEtcd(); await etcd.start();
const nodes = await startCluster(etcd.url, { a: ['a1', 'a2'], b: ['b1', 'b2'] }, (set) => ({
  channels: { 'mv/v1': { set: 'a', prefetch: PREFETCH, ...(process.env.REPLAY ? { retention: { seconds: 3600 } } : {}) } }, ...(calloff && set === 'a' ? { limits: { maxMoveBytes: 16384 } } : {}) }));
const ma = await waitMaster(nodes, 'a'); const mb = await waitMaster(nodes, 'b');
console.log(`mode ${mode}; masters a=${ma.id} b=${mb.id}; ${load()}`);
const hostsA = nodes.filter((n) => n.set === 'a').map((n) => n.spec);
const T0 = Date.now(); const marks = []; const mark = (what) => { marks.push(`${what}@${Date.now() - T0}`); console.log(`mark ${what} @${Date.now() - T0}`); };

const cons = await mkClient('cons', hostsA); const lis = await mkClient('lis', hostsA); const prod = await mkClient('prod', hostsA);
const tc = tracker(), tl = tracker(), tlate = tracker(); const handlerErrs = [];
for (const [name, t] of [['consumer', tc], ['listener', tl], ['late', tlate]]) {
  const add = t.add; t.samples = []; t.breakTimes = []; t.times = [];
  t.add = (m) => { const before = t.breaks, last = t.last.get(m.id); t.times.push(Date.now() - T0); add(m);
    if (t.breaks > before) { t.breakTimes.push(Date.now() - T0); if (t.samples.length < 5) t.samples.push(`${name} id ${m.id} seq ${m.seq} after ${last} @${Date.now() - T0}`); } };
}
const hc = cons.consume('mv/v1/*', { prefetch: PREFETCH }, (err, m, done) => { if (err) { handlerErrs.push(`consumer ${err.code} ${err.message}`); return; } tc.add(m); setTimeout(() => done(), HANDLER_MS); });
const hl = lis.listen('mv/v1/*', (err, m) => { if (err) { handlerErrs.push(`listener ${err.code} ${err.message}`); return; } tl.add(m); });
let late = null;
const lateListen = async () => { late = await mkClient('late', hostsA); const h = late.listen('mv/v1/*', (err, m) => { if (err) { handlerErrs.push(`late ${err.code} ${err.message}`); return; } tlate.add(m); }); await h.ready; };
if (mode === 'calloff-late') await lateListen();
await hc.ready; await hl.ready;
const stale = { consumer: 0, listener: 0 };
for (const [name, c] of [['consumer', cons], ['listener', lis]]) c.on('stale', () => { stale[name]++; });

const sentAt = new Map(); const ok = new Set(); const fails = {}; let sent = 0; const seq = new Array(IDS).fill(0); let pending = 0; let maxSendMs = 0; let producing = true;
const producer = (async () => {
  const t0 = Date.now();
  while (producing) {
    const due = Math.floor(((Date.now() - t0) / 1000) * RATE);
    while (sent < due && pending < 5000) {
      const id = sent % IDS; const s = seq[id]++; sent++; pending++; const st = Date.now();
      sentAt.set(`${id}:${s}`, Date.now() - T0);
      prod.send(`mv/v1/${id}`, { id, seq: s }).then(() => ok.add(`${id}:${s}`), (e) => { fails[e.code] = (fails[e.code] ?? 0) + 1; })
        .finally(() => { pending--; maxSendMs = Math.max(maxSendMs, Date.now() - st); });
    }
    await sleep(10);
  }
})();

await sleep(BEFORE_MS / 2);
let lateLeftAt = 0;
if (mode === 'calloff-late') { await late.disconnect(); lateLeftAt = ok.size; mark('late-left'); }
await sleep(BEFORE_MS / 2);
console.log(`before move: sent ${sent}, ok ${ok.size}, consumer got ${tc.count} (backlog ~${ok.size - tc.count}), listener ${tl.count}; ${load()}`);

let fired = null; const side = [];
const trigger = (node, text, fn) => waitLog(node, text, 120000).then(async () => { fired = Date.now() - T0; await fn(); }).catch(() => {});
// B_STOPS="TEXT:MS[:other],..." (move-b-down, atk31j): once b's brokers are restarted, in turn: the b broker that logs TEXT
// (or, with `:other`, the other b broker) SIGSTOPped MS ms (F3's lease losses on a loaded machine, forced)
const stopChain = async (bs, spec) => {
  for (const item of spec.split(',')) {
    const [text, ms, other] = item.split(':');
    const who = await Promise.any(bs.map((n) => waitLog(n, text, 60000).then(() => n))).catch(() => null);
    if (!who) { mark(`no-${text}`); return; }
    await stopFor(other ? bs.find((n) => n !== who) : who, Number(ms));
  }
};
const stopFor = async (n, ms) => { mark(`SIGSTOP-${n.id}`); n.child.kill('SIGSTOP'); await sleep(ms); n.child.kill('SIGCONT'); mark(`SIGCONT-${n.id}`); };
if (mode === 'calloff-kill-new') trigger(mb, 'handing back', async () => { mark(`kill9-${mb.id}`); await kill9(mb); });
if (mode === 'calloff-stop-new') trigger(mb, 'handing back', () => stopFor(mb, 3000));
if (mode === 'calloff-kill-old') trigger(ma, 'move called off', async () => { mark(`kill9-${ma.id}`); await kill9(ma); });
if (mode === 'calloff-late') trigger(mb, 'handing back', async () => { mark('late-back'); await lateListen(); mark('late-ready'); });
if (mode === 'calloff-stop-old') trigger(ma, 'move called off: the queue holds more', () => stopFor(ma, 3000));
if (mode === 'calloff-stop-back') trigger(ma, 'the queue is on this set again', () => stopFor(ma, 3000));
if (mode === 'calloff-kill-old-back') trigger(ma, 'sends taken meanwhile are back', async () => { mark(`kill9-${ma.id}`); await kill9(ma); });
if (mode === 'calloff-b-down' || mode === 'move-b-down') trigger(process.env.B_DOWN_ON === 'a' ? ma : mb, process.env.B_DOWN_AT ?? (calloff ? 'handing back' : 'taking the queue over'), async () => { // all of set b killed -9, back 4 s later
  await sleep(Number(process.env.KILL_DELAY_MS ?? 0)); // KILL_DELAY_MS: wait this long after the log line (b waits 200 ms before it writes)
  const bs = nodes.filter((n) => n.set === 'b'); mark('kill9-all-b'); await Promise.all(bs.map(kill9)); await sleep(4000);
  mark('restart-b'); const started = bs.map(startNode); if (process.env.B_STOPS) void stopChain(bs, process.env.B_STOPS); await Promise.all(started); mark('b-started'); });
if (mode === 'calloff-etcd-stop') trigger(mb, 'handing back', async () => { mark('SIGSTOP-etcd'); etcd.child.kill('SIGSTOP'); await sleep(4000); etcd.child.kill('SIGCONT'); mark('SIGCONT-etcd'); });
if (mode === 'stop-both-mid') trigger(ma, 'handing the queue over', () => Promise.all([stopFor(ma, 3000), stopFor(mb, 3000)]));
if (mode === 'stop-old-mid') trigger(ma, 'handing the queue over', () => stopFor(ma, 3000));
if (mode === 'stop-new-mid') trigger(mb, 'hand-over taken', () => stopFor(mb, 3000));
if (mode === 'back-mid') trigger(ma, 'handing the queue over', async () => {
  mark('move-back-a-start'); const r = await cliAsync(['move', 'mv/v1', '--to', 'a', '--timeout', '120', '-c', nodes[2].config]);
  mark('move-back-a-end'); side.push(`move --to a during a->b: exit ${r.code} in ${r.ms} ms: ${r.out.trim().split('\n').slice(-2).join(' | ')}`); console.log(side.at(-1)); });

const moves = [];
const move = async (to, cfg) => { mark(`move-${to}-start`); const r = await cliAsync(['move', 'mv/v1', '--to', to, '--timeout', '120', '-c', cfg]); mark(`move-${to}-end`);
  moves.push({ to, code: r.code, ms: r.ms, out: r.out.trim().split('\n').slice(-2).join(' | ') }); console.log(`move --to ${to} exit ${r.code} in ${r.ms} ms: ${moves.at(-1).out}`); };
if (mode === 'stop-traffic') { await stopFor(ma, 3000); }
else if (mode === 'a-restart-nomove') { // control for b-restart-after, no move: both brokers of a kill -9, restarted 4 s later
  const as = nodes.filter((n) => n.set === 'a'); mark('kill9-all-a'); await Promise.all(as.map(kill9)); fired = Date.now() - T0;
  await sleep(4000); mark('restart-a'); await Promise.all(as.map(startNode)); mark('a-started'); }
else if (mode === 'stop-flap') { // a's master stopped 3 s; the next master of a stopped 3 s; then again 1.2 s (past its fence, within its lease)
  await stopFor(ma, 3000); await sleep(1500);
  for (const ms of [3000, 1200]) { const m = await waitMaster(nodes, 'a'); await stopFor(m, ms); await sleep(2500); } }
else {
  const cfg = nodes.find((n) => n.set === 'a' && n !== ma).config; // a's slave: never killed nor stopped here
  await move('b', cfg);
  if (mode === 'calloff-twice') await move('b', cfg);
  if (mode === 'back-mid') { await sleep(200); await move('a', cfg); }
  if (mode === 'b-restart-after') { // control: the move ended; then both brokers of b kill -9 and restarted 4 s later
    await sleep(1500); const bs = nodes.filter((n) => n.set === 'b'); mark('kill9-all-b'); await Promise.all(bs.map(kill9)); fired = Date.now() - T0;
    await sleep(4000); mark('restart-b'); await Promise.all(bs.map(startNode)); mark('b-started'); }
}
await sleep(AFTER_MS);
producing = false; await producer;
const endWait = Date.now() + 75000;
while (pending > 0 && Date.now() < endWait) await sleep(100);
const lateKeys = () => (mode === 'calloff-late' ? [...ok] : []); // late subscribed before the first send
const done = () => [...ok].every((k) => tc.seen.has(k) && tl.seen.has(k)) && lateKeys().every((k) => tlate.seen.has(k));
while (!done() && Date.now() < endWait) await sleep(250);
const drainedAt = Date.now() - T0;
const lostC = [...ok].filter((k) => !tc.seen.has(k)).length, lostL = [...ok].filter((k) => !tl.seen.has(k)).length;
const lostLate = lateKeys().filter((k) => !tlate.seen.has(k)).length;
// REPLAY=1: the channel retained on both sets; a replay of the whole history at the end must give every answered send
// once, in seq order per id (operations.md "Retained history moves", the call-off's history written before what a put aside)
const replayRes = {};
if (process.env.REPLAY) {
  const tr = tracker(); const st0 = Date.now(); const seenR = new Set(); const dupSent = []; let pos = 0; const dupPos = [];
  const add0 = tr.add; tr.add = (m) => { const k = `${m.id}:${m.seq}`; pos++; if (seenR.has(k)) { dupSent.push(sentAt.get(k)); dupPos.push(pos); } seenR.add(k); add0(m); };
  try { replayRes.count = await prod.replay('mv/v1/*', { since: 0 }, (err, m) => { if (err) replayRes.handlerErr = `${err.code}`; else tr.add(m); }).done; } catch (e) { replayRes.err = `${e.code} ${e.message}`; }
  replayRes.ms = Date.now() - st0; replayRes.unique = tr.count; replayRes.dups = tr.dups; replayRes.breaks = tr.breaks;
  replayRes.missing = [...ok].filter((k) => !tr.seen.has(k)).length;
  if (dupSent.length) { replayRes.dupsSentFromMs = Math.min(...dupSent); replayRes.dupsSentToMs = Math.max(...dupSent); replayRes.dupsAtReplayPos = `${dupPos[0]}-${dupPos.at(-1)}`; }
  console.log('replay:', JSON.stringify(replayRes));
}
// where the lost ones were sent (ms since start, in 1 s buckets), and the listener's last reception
for (const [name, t] of [['consumer', tc], ['listener', tl]]) {
  const miss = [...ok].filter((k) => !t.seen.has(k)); if (!miss.length) continue;
  const buckets = {}; for (const k of miss) { const b = Math.floor(sentAt.get(k) / 1000); buckets[b] = (buckets[b] ?? 0) + 1; }
  console.log(`${name} missing by second sent: ${JSON.stringify(buckets)}; first missing ${miss.slice(0, 3).join(' ')}; last reception @${t.times.at(-1)}`);
}
const st = await cliAsync(['cluster', 'status', '--placements', '-c', nodes.find((n) => n.child && n.role !== 'dead').config]);
console.log(st.out.trim().split('\n').filter((l) => /mv\/v1|moving|master/.test(l)).join('\n'));

// gaps: longest pause of first receptions between the first mark and the end of traffic, and where it was
const gapIn = (times, from, to) => { let best = [0, 0]; let prev = from; for (const x of times) { if (x < from) continue; if (x > to) break; if (x - prev > best[0]) best = [x - prev, prev]; prev = x; } return best; }; // the tail after the last reception is not a gap (a message never heard counts as lost)
const roleEvents = [];
for (const n of nodes) for (const l of n.log) { const m = /"time":"([^"]+)".*"msg":"([^"]*(acts as master|acts as slave|called off|handing|hand-over|taken meanwhile|is on this set again|handed back|queue moved away)[^"]*)"/.exec(l); if (m) roleEvents.push(`${n.id} ${m[2].slice(0, 60)} @${Date.parse(m[1]) - T0}`); }
const firstMark = marks.length ? Number(marks[0].split('@')[1]) : 0; const trafficEnd = drainedAt;
const gC = gapIn(tc.times, firstMark, trafficEnd), gL = gapIn(tl.times, firstMark, trafficEnd);
const res = { mode, moves, side, fired, sent, answeredOk: ok.size, sendFailures: fails, maxSendMs, drainedAt,
  consumer: { got: tc.count, lost: lostC, dups: tc.dups, orderBreaks: tc.breaks, maxGapMs: gC[0], gapFrom: gC[1] },
  listener: { got: tl.count, lost: lostL, dups: tl.dups, orderBreaks: tl.breaks, maxGapMs: gL[0], gapFrom: gL[1] },
  late: mode === 'calloff-late' ? { got: tlate.count, lost: lostLate, dups: tlate.dups, orderBreaks: tlate.breaks, leftAfter: lateLeftAt } : undefined,
  handlerErrs: handlerErrs.slice(0, 6), clientErrors: { cons: cons.errors, lis: lis.errors, prod: prod.errors.slice(0, 5) }, stale, load: load() };
console.log(JSON.stringify(res));
console.log('events:', roleEvents.join(' | '));
console.log(`marks ${marks.join(' ')}`);
for (const t of [tc, tl, tlate]) if (t.samples.length) console.log('samples:', t.samples.join(' | '));
for (const n of nodes) writeFileSync(`/tmp/atk31c-${mode}-${T0}-${n.id}.log`, n.log.join('\n'));

const broken = [];
for (const m of moves) {
  if (calloff && !(m.code === 1 && /called off: it stays on a/.test(m.out))) broken.push(`move to ${m.to}: exit ${m.code} "${m.out}" (expected exit 1 "called off: it stays on a")`);
  if (!calloff && m.code !== 0) broken.push(`move to ${m.to} exit ${m.code}`);
}
const expectSet = calloff || (mode === 'move-b-down' && false) || mode === 'back-mid' || mode.startsWith('stop-traffic') || mode === 'stop-flap' || mode === 'a-restart-nomove' ? 'a' : 'b';
const placed = st.out.split('\n').find((l) => /mv\/v1/.test(l) && !/moving/.test(l)) ?? '';
if (/moving mv\/v1/.test(st.out) || !new RegExp(`\\b${expectSet}\\b`).test(placed)) broken.push(`placement at the end: "${placed.trim()}" (expected on ${expectSet}, no move under way)`);
if (Object.keys(fails).length) broken.push(`send failures ${JSON.stringify(fails)}`);
if (lostC || lostL || lostLate) broken.push(`lost consumer ${lostC} listener ${lostL} late ${lostLate}`);
if (process.env.REPLAY && (replayRes.err || replayRes.missing || replayRes.dups || replayRes.breaks)) broken.push(`replay ${JSON.stringify(replayRes)}`);
if (tc.breaks || tl.breaks || tlate.breaks) broken.push(`order breaks consumer ${tc.breaks} listener ${tl.breaks} late ${tlate.breaks}`);
const events = Math.max(1, moves.length + (mode === 'back-mid' ? 1 : 0) + (/kill|stop|down|restart/.test(mode) ? (mode === 'stop-flap' ? 3 : mode === 'stop-both-mid' ? 2 : 1) : 0));
if (tc.dups > PREFETCH * events) broken.push(`consumer duplicates ${tc.dups} > prefetch ${PREFETCH} x ${events}`);
if (handlerErrs.length) broken.push(`errors reached the handlers: ${handlerErrs.slice(0, 4).join(', ')}`);
if (/kill|stop|late|back|down/.test(mode) && !/stop-traffic|stop-flap/.test(mode) && fired === null) broken.push('trigger never fired');
if (gC[0] > 15000) broken.push(`consumer stalled ${gC[0]} ms from @${gC[1]}`);
console.log(broken.length ? `BROKEN: ${broken.join('; ')}` : 'HELD');
for (const n of nodes) { const e = n.log.filter((l) => /"level":"(error|fatal)"/.test(l)); if (e.length) console.log(`${n.id} errors:`, e.slice(0, 3).map((l) => l.slice(0, 300)).join('\n')); }
process.exit(broken.length ? 1 : 0);
