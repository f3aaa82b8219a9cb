// New angles on issue 31 moves (outside check, src/ not read). One script, MODE picks the angle:
//  triple     : whisker move mv/v1 a->b->a->b, each at once after the previous printed `moved`, ~1,000 msg/s
//  slow-late  : consumer prefetch 1, handler 50 ms; listener name `late` listens, disconnects before the move,
//               comes back (same name) after it; a listener `lis` stays
//  stop-new   : set b's master SIGSTOPped for 5 s as it logs `taking the queue over`, then SIGCONT
//  reload-all : `whisker reload` of every broker (config file unchanged but rewritten) while the move runs
// Promise (SPEC §13, operations.md "Moving a queue", client.md "Clusters"): nothing lost, order per id
// kept, duplicates at most what was in flight (prefetch per move), no error in the handlers, the move ends.
// Usage: nice -n 10 node test/attacks-31b/angles.mjs MODE
import { readFileSync, writeFileSync } from 'node:fs';
import { startEtcd, startCluster, mkClient, tracker, sleep, load, cliAsync, waitMaster, waitLog } from '../attacks-31/lib.mjs';

const mode = process.argv[2] ?? 'triple';
const RATE = mode === 'slow-late' ? 300 : 1000, IDS = 10, BEFORE_MS = 4000, AFTER_MS = 3000;
const PREFETCH = mode === 'slow-late' ? 1 : 10; let HANDLER_MS = mode === 'slow-late' ? 50 : 12; // slow-late: 0 once traffic stops, to drain
const etcd = await startEtcd(); await etcd.start();
const nodes = await startCluster(etcd.url, { a: ['a1', 'a2'], b: ['b1', 'b2'] }, () => ({ channels: { 'mv/v1': { set: 'a', prefetch: PREFETCH } } }), Number(process.env.LEASE ?? 2)); // LEASE: leaseTtl s
const ma = await waitMaster(nodes, 'a'); const mb = await waitMaster(nodes, 'b');
console.log(`mode ${mode}; masters a=${ma.id} b=${mb.id}; ${load()}`);
const hostsA = nodes.filter((n) => n.set === 'a').map((n) => n.spec);

const cons = await mkClient('cons', hostsA); const lis = await mkClient('lis', hostsA); const prod = await mkClient('prod', hostsA);
const tc = tracker(), tl = tracker(), tlate = tracker(); const handlerErrs = [];
const T0 = Date.now(); const marks = []; const mark = (what) => marks.push(`${what}@${Date.now() - T0}`);
// record where order breaks happen: time since start, id, seq, the higher seq seen before
for (const [name, t] of [['consumer', tc], ['listener', tl], ['late', tlate]]) {
  const add = t.add; t.samples = []; t.breakTimes = [];
  t.add = (m) => { const before = t.breaks, last = t.last.get(m.id); add(m); if (t.breaks > before) { t.breakTimes.push(Date.now() - T0); if (t.samples.length < 5) t.samples.push(`${name} id ${m.id} seq ${m.seq} after ${last} @${Date.now() - T0}`); } };
}
const hc = cons.consume('mv/v1/*', { prefetch: PREFETCH }, (err, m, done) => { if (err) { handlerErrs.push(`consumer ${err.code} ${err.message}`); return; } tc.add(m); setTimeout(() => done(), HANDLER_MS); });
const hl = lis.listen('mv/v1/*', (err, m) => { if (err) { handlerErrs.push(`listener ${err.code} ${err.message}`); return; } tl.add(m); });
let late = null, hlate = null;
const lateListen = async () => { late = await mkClient('late', hostsA); hlate = late.listen('mv/v1/*', (err, m) => { if (err) { handlerErrs.push(`late ${err.code} ${err.message}`); return; } tlate.add(m); }); await hlate.ready; };
if (mode === 'slow-late') await lateListen();
await hc.ready; await hl.ready;
const stale = {}; // protocol.md "Epochs": a deliver from a master of an older epoch is ignored (event `stale`), delivered again later
for (const [name, c] of [['consumer', cons], ['listener', lis]]) c.on('stale', (...a) => { const k = `${name}:${JSON.stringify(a).slice(0, 60)}`; stale[name] = (stale[name] ?? 0) + 1; if (!stale[k]) { stale[k] = 1; console.log('stale', name, JSON.stringify(a).slice(0, 200), `@${Date.now() - T0}`); } });

const ok = new Set(); const fails = {}; let sent = 0; const seq = new Array(IDS).fill(0); let pending = 0; let maxSendMs = 0; let producing = true;
const producer = (async () => {
  const t0 = Date.now();
  while (producing) {
    const due = Math.floor(((Date.now() - t0) / 1000) * RATE);
    while (sent < due && pending < 5000) {
      const id = sent % IDS; const s = seq[id]++; sent++; pending++; const st = Date.now();
      prod.send(`mv/v1/${id}`, { id, seq: s }).then(() => ok.add(`${id}:${s}`), (e) => { fails[e.code] = (fails[e.code] ?? 0) + 1; })
        .finally(() => { pending--; maxSendMs = Math.max(maxSendMs, Date.now() - st); });
    }
    await sleep(10);
  }
})();

await sleep(BEFORE_MS / 2);
let lateLeftAt = 0;
if (mode === 'slow-late') { await late.disconnect(); lateLeftAt = ok.size; console.log(`late left after ${ok.size} answered sends`); }
await sleep(BEFORE_MS / 2);
let stopped = null;
if (mode === 'stop-new') waitLog(mb, 'taking the queue over', 120000).then(async () => {
  mb.child.kill('SIGSTOP'); stopped = Date.now(); console.log(`SIGSTOP ${mb.id} (b's master) at "taking the queue over"`);
  await sleep(5000); mb.child.kill('SIGCONT'); console.log(`SIGCONT ${mb.id}`); }).catch(() => {});
console.log(`before move: sent ${sent}, ok ${ok.size}, consumer got ${tc.count} (backlog ~${ok.size - tc.count}), listener ${tl.count}; ${load()}`);
const targets = mode === 'triple' ? ['b', 'a', 'b'] : mode === 'stop-nomove' ? [] : ['b'];
if (mode === 'stop-nomove') { // control, no move: set a's master SIGSTOPped STOP_MS (default 2500, lease 2 s), then SIGCONT
  mark('stop-a'); ma.child.kill('SIGSTOP'); stopped = Date.now(); await sleep(Number(process.env.STOP_MS ?? 2500)); ma.child.kill('SIGCONT'); mark('cont-a');
  if (process.env.STOP2_MS) { // then the new master of a SIGSTOPped STOP2_MS (a lease flap of the new master)
    await sleep(1000); const m2 = nodes.find((n) => n.set === 'a' && n !== ma && n.role === 'master');
    if (m2) { mark(`stop-${m2.id}`); m2.child.kill('SIGSTOP'); await sleep(Number(process.env.STOP2_MS)); m2.child.kill('SIGCONT'); mark(`cont-${m2.id}`); } else mark('no-new-master'); } }
const moves = [];
for (const to of targets) {
  mark(`move-${to}-start`); const p = cliAsync(['move', 'mv/v1', '--to', to, '--timeout', '120', '-c', ma.config]);
  let reloads = null;
  if (mode === 'reload-all') {
    await sleep(300);
    reloads = await Promise.all(nodes.map((n) => { writeFileSync(n.config, readFileSync(n.config)); return cliAsync(['reload', '-c', n.config]); }));
    console.log('reloads:', reloads.map((r, i) => `${nodes[i].id} exit ${r.code} ${r.out.trim().split('\n')[0]}`).join(' | '));
  }
  const r = await p; mark(`move-${to}-end`); moves.push({ to, code: r.code, ms: r.ms, reloads: reloads?.map((x) => x.code) });
  console.log(`move --to ${to} exit ${r.code} in ${r.ms} ms: ${r.out.trim().split('\n').slice(-2).join(' | ')}`);
}
if (mode === 'slow-late') { await lateListen(); console.log('late back'); }
await sleep(AFTER_MS);
producing = false; await producer; if (mode === 'slow-late') HANDLER_MS = 0;
const endWait = Date.now() + 60000;
while (pending > 0 && Date.now() < endWait) await sleep(100);
const done = () => [...ok].every((k) => tc.seen.has(k) && tl.seen.has(k)) && (mode !== 'slow-late' || [...ok].every((k) => tlate.seen.has(k) || !lateWanted(k)));
// what late should have: answered after it first subscribed (all of ok here, late subscribed before sends began)
const lateWanted = () => true;
while (!done() && Date.now() < endWait) await sleep(250);
const lostC = [...ok].filter((k) => !tc.seen.has(k)).length, lostL = [...ok].filter((k) => !tl.seen.has(k)).length;
const lostLate = mode === 'slow-late' ? [...ok].filter((k) => !tlate.seen.has(k)).length : 0;
const st = await cliAsync(['cluster', 'status', '--placements', '-c', nodes[0].config]);
console.log(st.out.trim());
const res = { mode, moves, sent, answeredOk: ok.size, sendFailures: fails, maxSendMs, consumer: { got: tc.count, lost: lostC, dups: tc.dups, orderBreaks: tc.breaks, maxGapMs: tc.maxGap() }, listener: { got: tl.count, lost: lostL, dups: tl.dups, orderBreaks: tl.breaks },
  late: mode === 'slow-late' ? { got: tlate.count, lost: lostLate, dups: tlate.dups, orderBreaks: tlate.breaks, leftAfter: lateLeftAt } : undefined, handlerErrs, staleEvents: { consumer: stale.consumer ?? 0, listener: stale.listener ?? 0 }, load: load() };
console.log(JSON.stringify(res));
const roleEvents = [];
for (const n of nodes) for (const l of n.log) { const m = /"time":"([^"]+)".*"msg":"([^"]*(acts as master|no longer the elected master|acts as slave)[^"]*)"/.exec(l); if (m) roleEvents.push(`${n.id} ${m[3]} @${Date.parse(m[1]) - T0}`); }
console.log('role events:', roleEvents.join(' | '));
const { writeFileSync: wf } = await import('node:fs');
for (const n of nodes) wf(`/tmp/atk31b-${mode}-${n.id}.log`, n.log.join('\n'));
console.log('times elected master per broker:', nodes.map((n) => `${n.id} ${n.log.filter((l) => l.includes('this broker acts as master')).length}`).join(', '));
const span = (t) => t.breakTimes.length ? `${t.breakTimes.length} breaks from @${t.breakTimes[0]} to @${t.breakTimes[t.breakTimes.length - 1]} ms` : 'no breaks';
console.log(`marks ${marks.join(' ')}; consumer ${span(tc)}; listener ${span(tl)}; late ${span(tlate)}`);
for (const t of [tc, tl, tlate]) if (t.samples.length) console.log('samples:', t.samples.join(' | '));
const broken = [];
for (const m of moves) if (m.code !== 0) broken.push(`move to ${m.to} exit ${m.code}`);
if (Object.keys(fails).length) broken.push(`send failures ${JSON.stringify(fails)}`);
if (lostC || lostL || lostLate) broken.push(`lost consumer ${lostC} listener ${lostL} late ${lostLate}`);
if (tc.breaks || tl.breaks || tlate.breaks) broken.push(`order breaks consumer ${tc.breaks} listener ${tl.breaks} late ${tlate.breaks}`);
if (tc.dups > PREFETCH * moves.length) broken.push(`consumer duplicates ${tc.dups} > prefetch ${PREFETCH} x ${moves.length} moves`);
if (handlerErrs.length) broken.push(`errors reached the handlers: ${handlerErrs.slice(0, 4).join(', ')}`);
if (mode === 'stop-new' && !stopped) broken.push('SIGSTOP trigger never fired');
if (mode === 'reload-all' && moves[0].reloads.some((c) => c !== 0)) broken.push('a reload failed');
console.log(broken.length ? `BROKEN: ${broken.join('; ')}` : 'HELD');
for (const n of nodes) if (n.log.some((l) => /"level":"(error|fatal)"/.test(l))) console.log(`${n.id} errors:`, n.log.filter((l) => /"level":"(error|fatal)"/.test(l)).slice(0, 3).join('\n'));
if (mode === 'stop-new') for (const n of nodes) console.log(n.id, n.role, n.log.filter((l) => /acts as|move|hand-over|taking/.test(l)).slice(-6).map((l) => l.slice(0, 200)).join('\n   '));
process.exit(broken.length ? 1 : 0);
