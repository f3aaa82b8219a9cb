// The master SIGSTOPped for different durations (STOPS, ms; default 1000,3000,10000) under two producers (every 5 ms),
// one consumer (prefetch PREFETCH, done() 20 ms after each delivery) and one listener on the same channel.
// Election cluster a,b,c + etcd, leaseTtl LEASE (default 4 s: fence at 2 s; 1 s is within the fence, 3 s past the
// fence but within the lease, 10 s past the lease), heartbeatTimeout 2 s.
// Docs: operations.md#failover table ("lost 0, twice at most the in-flight window per failover ... never two brokers
// delivering to a client at once"), #automatic-failover ("a master frozen past its lease ... that resumes cannot make a
// consumer handle a message twice through it"; "a message is delivered twice only if it was in flight when the master
// died (at most the consumers' prefetch per failure)").
import { makeNodes, start, kill9, health, metrics, metric, mkClient, keyPair, sleep, port, check, finish, startEtcdAt, electionBlock, waitFor } from './harness.mjs';
import { execFileSync } from 'node:child_process';

const STOPS = (process.env.STOPS ?? '1000,3000,10000').split(',').map(Number);
const LEASE = Number(process.env.LEASE ?? 4), PREFETCH = Number(process.env.PREFETCH ?? 10);
const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up(), { STOPS, LEASE, PREFETCH });
const etcd = await startEtcdAt(await port(), await port()); await etcd.start();
const CH = 'jobs/v1/x';
const nodes = await makeNodes(['a', 'b', 'c'], { election: electionBlock(etcd.url, '/atk27c/c1-' + process.pid, LEASE), heartbeatTimeout: 2, logLevel: 'info', ...(process.env.MAXQ ? { channels: { 'jobs/v1': { maxItemsInQueue: Number(process.env.MAXQ) } } } : {}) });
await Promise.all(nodes.map(start));
const T0 = Date.now(); const ts = () => ((Date.now() - T0) / 1000).toFixed(1);
const roleOf = async (n) => (n.stopped ? 'stopped' : (await health(n)).body?.role);
const master = async () => { for (const n of nodes) if ((await roleOf(n)) === 'master') return n; return null; };
const epochOf = async (n) => (await health(n)).body?.election?.epoch;
if (!await waitFor(master, 60000, 200)) { check('c1 setup: a master elected', false); await finish(1); }

const faults = []; // {t, dur, id}
const roundAt = (t) => { let r = -1; for (let i = 0; i < faults.length; i++) if (faults[i].t <= t) r = i; return r; };
const mk = () => ({ seen: new Map(), dups: [] });
const cons = mk(), lis = mk();
const note = (rec, id) => { const c = (rec.seen.get(id) ?? 0) + 1; rec.seen.set(id, c); if (c > 1) rec.dups.push({ id, t: Date.now() }); };
const cc = await mkClient(nodes, 'c1-cons', keyPair(), { sendTimeout: 30000 });
cons.held = 0;
const herr = []; const perSec = {};
const hc = cc.consume(CH, { prefetch: PREFETCH }, (err, msg, done, info) => { if (err) { herr.push(`${ts()} ${err.code} ${err.message}`); return; } perSec[Math.floor((Date.now() - T0) / 1000)] = (perSec[Math.floor((Date.now() - T0) / 1000)] ?? 0) + 1; note(cons, info.messageId); cons.lastT = Date.now(); cons.held++; setTimeout(() => { cons.held--; done(); }, 20); });
const lc = await mkClient(nodes, 'c1-lst', keyPair(), { sendTimeout: 30000 });
const hl = lc.listen(CH, (err, msg, info) => { if (!err) note(lis, info.messageId); });
await Promise.all([hc.ready, hl.ready]);
const prods = [await mkClient(nodes, 'c1-p0', keyPair(), { sendTimeout: 30000 }), await mkClient(nodes, 'c1-p1', keyPair(), { sendTimeout: 30000 })];
const answers = []; const pending = []; let run = true; console.log(`t+${ts()} producers start`);
const loops = prods.map((p, k) => (async () => { let i = 0; while (run) { const j = i++;
  pending.push(new Promise((r) => p.send(CH, { k, i: j }, (err, _n, info) => { answers.push({ id: info?.messageId ?? err?.info?.messageId, code: err ? err.code : 'OK', stored: (err?.info?.storedBy ?? []).length, k, i: j, t: ts() }); r(); })));
  await sleep(5); } })());
await sleep(3000);
const log = [];
for (const dur of STOPS) {
  const m = await waitFor(master, 30000, 100); if (!m) { log.push(`no master before the ${dur} ms stop`); continue; }
  const e0 = await epochOf(m);
  faults.push({ t: Date.now(), dur, id: m.id }); console.log(`t+${ts()} ${process.env.KILL ? 'kill -9' : 'SIGSTOP'} master ${m.id} for ${dur} ms`);
  if (process.env.KILL) { m.stopped = true; await kill9(m); await sleep(dur); m.stopped = false; await start(m); }
  else { m.proc.kill('SIGSTOP'); m.stopped = true; await sleep(dur); m.proc.kill('SIGCONT'); m.stopped = false; }
  await sleep(9000);
  const m2 = await waitFor(master, 20000, 100); const e1 = m2 ? await epochOf(m2) : null;
  const l = `t+${ts()} SIGSTOP ${m.id} ${dur} ms (epoch ${e0}) -> master ${m2?.id} epoch ${e1}`; log.push(l); console.log(l);
  faults.at(-1).failover = m2 !== m || e1 !== e0;
}
run = false; await Promise.all(loops); await Promise.all(pending);
const ok = answers.filter((a) => a.code === 'OK').map((a) => a.id);
const stored = answers.filter((a) => a.code !== 'OK' && a.stored).map((a) => a.id);
const tally = {}; for (const a of answers) tally[a.code] = (tally[a.code] ?? 0) + 1;
const want = [...ok, ...stored];
// wait until everything came, or nothing more came for 15 s (a slow consumer is not a lost message)
{ let lastN = -1, lastT = Date.now(); await waitFor(() => { const n = cons.seen.size + lis.seen.size; if (n !== lastN) { lastN = n; lastT = Date.now(); }
  return want.every((id) => cons.seen.has(id) && lis.seen.has(id)) || Date.now() - lastT > 15000; }, 120000, 250); }
await sleep(2000);
for (const n of nodes) { const ls = (n.log.match(/[^\n]*(fenc|acts as slave|acts as master|elected master)[^\n]*/g) ?? []).map((l) => ((l.match(/"time":"[^"]*T([^"Z]*)/) ?? [])[1] ?? '') + ' ' + ((l.match(/"msg":"([^"]*)"/) ?? [])[1] ?? l.slice(0, 120)));
  console.log(`${n.id} role lines:`, ls.join(' | ')); }
console.log('stops at', faults.map((f) => `${f.id} ${new Date(f.t).toISOString().slice(11, 23)} for ${f.dur} ms`).join(', '));
console.log('faults:', log.join(' | ')); console.log(up());
const lostC = want.filter((id) => !cons.seen.has(id)).length, lostL = want.filter((id) => !lis.seen.has(id)).length;
const qstate = async () => Object.fromEntries(await Promise.all(nodes.map(async (n) => { const m = await metrics(n); return [n.id, { role: metric(m, 'whisker_role'), depth: metric(m, 'whisker_queue_depth'), inFlight: metric(m, 'whisker_queue_in_flight'), msgs: metric(m, 'whisker_queue_messages'), delivered: metric(m, 'whisker_messages_delivered_total'), acked: metric(m, 'whisker_messages_acked_total'), requeued: metric(m, 'whisker_messages_requeued_total'), dropped: metric(m, 'whisker_messages_dropped_total'), expired: metric(m, 'whisker_messages_expired_total') }]; })));
if (lostC || lostL) {
  const miss = answers.filter((a) => (a.code === 'OK' || a.stored) && !cons.seen.has(a.id));
  const byK = {}; for (const a of miss) (byK[a.k] ??= []).push(a);
  for (const [k, as] of Object.entries(byK)) console.log(`consumer never got producer ${k}: ${as.length}, i ${as[0].i}..${as.at(-1).i}, answered t+${as[0].t}..t+${as.at(-1).t}`);
  console.log('consumer handler errors', herr.slice(0, 5), 'client errors', cc.errors.slice(0, 5).map((e) => `${((e.t - T0) / 1000).toFixed(1)} ${e.code} ${e.message}`), 'deliveries per second', JSON.stringify(perSec));
  console.log('consumer: last delivery t+', ((cons.lastT - T0) / 1000).toFixed(1), 'unacked held now', cons.held, 'queues', JSON.stringify(await qstate()));
  if (process.env.WAIT_MORE) { console.log(`waiting ${process.env.WAIT_MORE} s more (requeueInterval default 100 s)`); await sleep(Number(process.env.WAIT_MORE) * 1000);
    console.log('after waiting: consumer still missing', want.filter((id) => !cons.seen.has(id)).length, 'queues', JSON.stringify(await qstate())); }
}
check('c1 0 lost: every OK (or storedBy) send consumed and listened', lostC === 0 && lostL === 0, { answers: tally, consumerLost: lostC, listenerLost: lostL });
faults.forEach((f, r) => {
  const dc = cons.dups.filter((d) => roundAt(d.t) === r).length, dl = lis.dups.filter((d) => roundAt(d.t) === r).length;
  const bound = f.failover ? PREFETCH : 0;
  check(`c1 SIGSTOP ${f.dur} ms of master ${f.id}: duplicates within the bound (${f.failover ? 'a failover: prefetch ' + PREFETCH : 'no failover: 0'})`, dc <= bound, { consumerTwice: dc, listenerTwice: dl, failover: f.failover });
});
const before = cons.dups.filter((d) => roundAt(d.t) < 0).length + lis.dups.filter((d) => roundAt(d.t) < 0).length;
if (before) check('c1 no duplicates before any fault', false, { before });
for (const p of prods) await p.disconnect(); await cc.disconnect(); await lc.disconnect();
if (process.env.KEEP_LOGS) { const { mkdirSync, writeFileSync } = await import('node:fs'); mkdirSync(process.env.KEEP_LOGS, { recursive: true }); for (const n of nodes) writeFileSync(`${process.env.KEEP_LOGS}/${n.id}.log`, n.log); }
await finish(0);
