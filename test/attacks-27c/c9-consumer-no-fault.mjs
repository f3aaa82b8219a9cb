// c1 without any fault: does a consumer (prefetch 10, done() 20 ms after each delivery) get every OK send of two
// producers (every 5 ms) on an election cluster a,b,c (leaseTtl LEASE=4, heartbeatTimeout 2)? Prints the consumer's
// handler errors and the client's error events, per-broker counters, and which sends it never got.
// Docs: operations.md#failover ("lost 0"), SPEC §7 (a message reaches one consumer of the group; acked only by done()).
import { makeNodes, start, health, metrics, metric, mkClient, keyPair, sleep, port, check, finish, startEtcdAt, electionBlock, waitFor } from './harness.mjs';
import { execFileSync } from 'node:child_process';

const LEASE = Number(process.env.LEASE ?? 4), PREFETCH = Number(process.env.PREFETCH ?? 10), SECONDS = Number(process.env.SECONDS ?? 20);
const ELECTION = process.env.ELECTION !== '0';
const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up(), { LEASE, PREFETCH, SECONDS, ELECTION });
const etcd = await startEtcdAt(await port(), await port()); if (ELECTION) await etcd.start();
const CH = 'jobs/v1/x';
const nodes = await makeNodes(['a', 'b', 'c'], { ...(ELECTION ? { election: electionBlock(etcd.url, '/atk27c/c9-' + process.pid, LEASE) } : {}), heartbeatTimeout: 2, logLevel: 'info', ...(process.env.MAXQ ? { channels: { 'jobs/v1': { maxItemsInQueue: Number(process.env.MAXQ) } } } : {}) });
await Promise.all(nodes.map(start));
const T0 = Date.now(); const ts = () => ((Date.now() - T0) / 1000).toFixed(1);
const master = async () => { for (const n of nodes) if ((await health(n)).body?.role === 'master') return n; return null; };
const m0 = await waitFor(master, 60000, 200); console.log(`t+${ts()} master ${m0?.id}`);
const seen = new Map(); const herr = []; let held = 0; const deliv = [];
const cc = await mkClient(nodes, 'c9-cons', keyPair(), { sendTimeout: 30000 });
const hc = cc.consume(CH, { prefetch: PREFETCH }, (err, msg, done, info) => { if (err) { herr.push(`${ts()} ${err.code} ${err.message}`); return; }
  seen.set(info.messageId, (seen.get(info.messageId) ?? 0) + 1); deliv.push([ts(), msg.k, msg.i]); held++; setTimeout(() => { held--; done(); }, 20); });
const lseen = new Set(); const lc = await mkClient(nodes, 'c9-lst', keyPair(), { sendTimeout: 30000 });
const hl = lc.listen(CH, (err, msg, info) => { if (!err) lseen.add(info.messageId); });
await Promise.all([hc.ready, hl.ready]); console.log(`t+${ts()} subscriptions ready`);
const prods = [await mkClient(nodes, 'c9-p0', keyPair(), { sendTimeout: 30000 }), await mkClient(nodes, 'c9-p1', keyPair(), { sendTimeout: 30000 })];
const answers = []; const pending = []; let run = true;
const loops = prods.map((p, k) => (async () => { let i = 0; while (run) { const j = i++;
  pending.push(new Promise((r) => p.send(CH, { k, i: j }, (err, _n, info) => { answers.push({ id: info?.messageId ?? err?.info?.messageId, code: err ? err.code : 'OK', k, i: j, t: ts() }); r(); })));
  await sleep(5); } })());
await sleep(SECONDS * 1000);
run = false; await Promise.all(loops); await Promise.all(pending);
const want = answers.filter((a) => a.code === 'OK');
{ let lastN = -1, lastT = Date.now(); await waitFor(() => { const n = seen.size; if (n !== lastN) { lastN = n; lastT = Date.now(); } return want.every((a) => seen.has(a.id)) || Date.now() - lastT > 15000; }, 90000, 250); }
const miss = want.filter((a) => !seen.has(a.id));
const byK = {}; for (const a of miss) (byK[a.k] ??= []).push(a);
for (const [k, as] of Object.entries(byK)) console.log(`consumer never got producer ${k}: ${as.length}, i ${as[0].i}..${as.at(-1).i} (${as.slice(0, 10).map((a) => a.i).join(',')}), answered t+${as[0].t}..t+${as.at(-1).t}`);
const q = Object.fromEntries(await Promise.all(nodes.map(async (n) => { const m = await metrics(n); return [n.id, { role: metric(m, 'whisker_role'), depth: metric(m, 'whisker_queue_depth'), inFlight: metric(m, 'whisker_queue_in_flight'), delivered: metric(m, 'whisker_messages_delivered_total'), acked: metric(m, 'whisker_messages_acked_total'), requeued: metric(m, 'whisker_messages_requeued_total'), dropped: metric(m, 'whisker_messages_dropped_total'), expired: metric(m, 'whisker_messages_expired_total'), conns: metric(m, 'whisker_connections') }]; })));
console.log('handler errors', herr.slice(0, 5), 'client errors', cc.errors.slice(0, 5).map((e) => `${e.code} ${e.message}`), 'held now', held, 'queues', JSON.stringify(q));
for (const n of nodes) { const ls = (n.log.match(/[^\n]*"level":"(warn|error)"[^\n]*/g) ?? []).filter((l) => !/management HTTP has no token|isMaster in the file/.test(l)).slice(0, 6).map((l) => l.slice(0, 220)); if (ls.length) console.log(n.id, 'warn/error lines:', ls.join(' || ')); }
console.log(up());
check(`c9 no fault: the consumer got every OK send (the listener too)`, miss.length === 0 && want.every((a) => lseen.has(a.id)), { ok: want.length, consumerMissing: miss.length, listenerMissing: want.filter((a) => !lseen.has(a.id)).length, twice: [...seen.values()].filter((v) => v > 1).length });
for (const p of prods) await p.disconnect(); await cc.disconnect(); await lc.disconnect();
await finish(0);
