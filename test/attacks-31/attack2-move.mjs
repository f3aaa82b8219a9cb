// Attack 2: `whisker move mv/v1 --to b` under ~1,000 msg/s with a consumer (prefetch 10, slower than
// the sends) and a listener. MODE: plain | kill-old (kill -9 set a's master as it logs
// "handing the queue over") | kill-new (kill -9 set b's master as it logs "taking the queue over")
// | kill-old-late (a's master at "hand-over written") | kill-new-late (b's master at "hand-over taken") | roundtrip (to b, then at once back to a).
// Promise (SPEC §13, operations.md "Moving a queue"): 0 lost, per-id order kept, duplicates at most
// what was in flight (consumer prefetch 10; the listener what it had not acked), the move ends.
// Usage: nice -n 10 node test/attacks-31/attack2-move.mjs [plain|kill-old|kill-new]
import { startEtcd, startCluster, mkClient, tracker, sleep, load, cliAsync, kill9, waitMaster, waitLog } from './lib.mjs';

const mode = process.argv[2] ?? 'plain';
const RATE = 1000, IDS = 10, BEFORE_MS = 4000, AFTER_MS = 3000;
const etcd = await startEtcd(); await etcd.start();
const nodes = await startCluster(etcd.url, { a: ['a1', 'a2'], b: ['b1', 'b2'] }, () => ({ channels: { 'mv/v1': { set: 'a', prefetch: 10 } } }));
const ma = await waitMaster(nodes, 'a'); const mb = await waitMaster(nodes, 'b');
console.log(`masters a=${ma.id} b=${mb.id}; ${load()}`);
const hostsA = nodes.filter((n) => n.set === (process.env.SEED_SET ?? 'a')).map((n) => n.spec); // SEED_SET=b: clients given set b's brokers

const cons = await mkClient('cons', hostsA); const lis = await mkClient('lis', hostsA); const prod = await mkClient('prod', hostsA);
const tc = tracker(), tl = tracker(); const handlerErrs = [];
const hc = cons.consume('mv/v1/*', { prefetch: 10 }, (err, m, done) => { if (err) { handlerErrs.push(`consumer ${err.code}`); console.log('consumer err', err.code); return; } tc.add(m); setTimeout(() => done(), 12); });
const hl = lis.listen('mv/v1/*', (err, m) => { if (err) { handlerErrs.push(`listener ${err.code}`); console.log('listener err', err.code); return; } tl.add(m); });
await hc.ready; await hl.ready;

const ok = new Set(); const fails = {}; let sent = 0; const seq = new Array(IDS).fill(0); let pending = 0; let maxSendMs = 0;
let producing = true;
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

await sleep(BEFORE_MS);
const mover = nodes.find((n) => (mode.startsWith('kill-old') ? n.set === 'b' && n !== mb : mode.startsWith('kill-new') ? n.set === 'a' && n !== ma : n === ma));
let killed = null;
const trig = { 'kill-old': 'handing the queue over', 'kill-old-late': 'hand-over written', 'kill-new': 'taking the queue over', 'kill-new-late': 'hand-over taken' }[mode];
if (mode.startsWith('kill-old')) waitLog(ma, trig, 120000).then(async () => { await kill9(ma); killed = { who: ma.id, at: Date.now() }; console.log(`killed -9 ${ma.id} (a's master) as it logged "${trig}"`); }).catch(() => {});
if (mode.startsWith('kill-new')) waitLog(mb, trig, 120000).then(async () => { await kill9(mb); killed = { who: mb.id, at: Date.now() }; console.log(`killed -9 ${mb.id} (b's master) as it logged "${trig}"`); }).catch(() => {});
const backlog = ok.size - tc.count;
console.log(`before move: sent ${sent}, ok ${ok.size}, consumer got ${tc.count} (backlog ~${backlog}), listener ${tl.count}; ${load()}`);
const mv = await cliAsync(['move', 'mv/v1', '--to', 'b', '--timeout', '120', '-c', mover.config]);
console.log(`move (-c ${mover.id}) exit ${mv.code} in ${mv.ms} ms: ${mv.out.trim().split('\n').slice(-3).join(' | ')}`);
let mvBack = null;
if (mode === 'roundtrip') { // back to a, at once (or after ROUNDTRIP_PAUSE_MS), under the same traffic
  await sleep(Number(process.env.ROUNDTRIP_PAUSE_MS ?? 0));
  mvBack = await cliAsync(['move', 'mv/v1', '--to', 'a', '--timeout', '120', '-c', mover.config]);
  console.log(`move back (-c ${mover.id}) exit ${mvBack.code} in ${mvBack.ms} ms: ${mvBack.out.trim().split('\n').slice(-3).join(' | ')}`);
}
await sleep(AFTER_MS);
producing = false; await producer;
const endWait = Date.now() + 90000;
while (pending > 0 && Date.now() < endWait) await sleep(100);
const done = () => [...ok].every((k) => tc.seen.has(k) && tl.seen.has(k));
while (!done() && Date.now() < endWait) await sleep(250);
const lostC = [...ok].filter((k) => !tc.seen.has(k)).length, lostL = [...ok].filter((k) => !tl.seen.has(k)).length;
const st = await cliAsync(['cluster', 'status', '--placements', '-c', nodes.find((n) => n.role !== 'dead').config]);
console.log(st.out.trim());
const res = { mode, moveMs: mv.ms, moveExit: mv.code, moveBackMs: mvBack?.ms, moveBackExit: mvBack?.code, sent, answeredOk: ok.size, sendFailures: fails, maxSendMs, consumer: { got: tc.count, lost: lostC, dups: tc.dups, orderBreaks: tc.breaks, maxGapMs: tc.maxGap() }, listener: { got: tl.count, lost: lostL, dups: tl.dups, orderBreaks: tl.breaks }, killed: killed?.who ?? null, load: load() };
console.log(JSON.stringify(res));
const broken = [];
if (mv.code !== 0) broken.push('move did not finish');
if (mvBack && mvBack.code !== 0) broken.push('move back did not finish');
if (lostC || lostL) broken.push(`lost consumer ${lostC} listener ${lostL}`);
if (tc.breaks || tl.breaks) broken.push(`order breaks consumer ${tc.breaks} listener ${tl.breaks}`);
if (tc.dups > 10) broken.push(`consumer duplicates ${tc.dups} > prefetch 10`);
if (handlerErrs.length) broken.push(`errors reached the handlers: ${handlerErrs.join(', ')}`);
if (mode.startsWith('kill') && !killed) broken.push('kill trigger never fired');
console.log(broken.length ? `BROKEN: ${broken.join('; ')}` : 'HELD');
for (const n of nodes) if (n.log.some((l) => /"level":"(error|fatal)"/.test(l))) console.log(`${n.id} errors:`, n.log.filter((l) => /"level":"(error|fatal)"/.test(l)).slice(0, 3).join('\n'));
process.exit(broken.length ? 1 : 0);
