/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// Scenario 2, limits: a master a and a slave b (configured mode). Channel mb/v1 with retention.maxBytes 65,536: N sends
// (default 1000, ~300 B of data each) fired without waiting (pipelined, all in flight at once), then again 2N; the .seg
// files of its history directory summed every 10 ms on both brokers, and whisker_history_bytes read. Channel sec/v1 with
// retention.seconds 2: 200 sends, then nothing sent; 10 s after the last (2 s + the 5 s trim + 3 s slack) its .seg files
// and whisker_history_messages on both brokers, and a replay (empty).
// Promises: configuration.md#retention: maxBytes "never add up to more, at any moment, however the sends are batched ...
// after a trim between 7/8 of maxBytes and maxBytes stays"; seconds "its file goes at the next trim (every 5 s, whether
// or not anything is sent ...), the newest file included". Issue 27 items 5-6.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { makeNodes, start, sleep, finish, waitFor, check, metrics, metric, mkClient, keyPair, up, replayFrom } from './common.mjs';
const N = Number(process.env.N ?? 1000);
console.log('start', new Date().toISOString(), up(), { N });
const nodes = await makeNodes(['a', 'b'], { logLevel: 'info', heartbeatTimeout: 2,
  channels: { 'mb/v1': { retention: { maxBytes: 65536 } }, 'sec/v1': { retention: { seconds: 2 } } } });
await Promise.all(nodes.map(start));
await waitFor(() => /"msg":"in step with the master/.test(nodes[1].log), 30000, 100);
function segBytes(n, ep) {
  const dir = join(n.config.dataDirectory, 'history'); let sum = 0; let files = 0;
  try { for (const d of readdirSync(dir)) if (d.startsWith(ep + '@')) for (const f of readdirSync(join(dir, d))) if (f.endsWith('.seg')) { sum += statSync(join(dir, d, f)).size; files++; } } catch { /* not there yet */ }
  return { sum, files };
}
const P = await mkClient(nodes, `p-${process.pid}`, keyPair(), { sendTimeout: 10000 });
const body = 'x'.repeat(280);
async function burst(ch, k, from) { const r = []; for (let i = 0; i < k; i++) r.push(P.send(ch, { n: from + i, body }).then(() => 'OK', (e) => e.code)); return Promise.all(r); }
async function round(k, from) {
  const mx = { a: 0, b: 0 }; let run = true;
  const samp = (async () => { while (run) { for (const n of nodes) mx[n.id] = Math.max(mx[n.id], segBytes(n, 'mb').sum); await sleep(10); } })();
  const res = await burst('mb/v1/x', k, from);
  await sleep(300); run = false; await samp;
  const settle = {}; for (let i = 0; i < 20; i++) { for (const n of nodes) settle[n.id] = Math.max(settle[n.id] ?? 0, segBytes(n, 'mb').sum); await sleep(100); }
  for (const n of nodes) mx[n.id] = Math.max(mx[n.id], settle[n.id]);
  const m = {}; await sleep(2000); for (const n of nodes) m[n.id] = metric(await metrics(n), 'whisker_history_bytes{queue="mb/v1"}') ?? metric(await metrics(n), 'whisker_history_bytes');
  const after = Object.fromEntries(nodes.map((n) => [n.id, segBytes(n, 'mb')]));
  return { k, ok: res.filter((x) => x === 'OK').length, maxSegBytes: mx, afterSeg: after, metricHistoryBytes: m };
}
const r1 = await round(N, 0);
const r2 = await round(2 * N, N);
const rep = await replayFrom(nodes[0], 'mb/v1/x'); const repB = await replayFrom(nodes[1], 'mb/v1/x');
const tailOk = (r) => r.length > 0 && r.every(([, n], i) => i === 0 || n === r[i - 1][1] + 1) && r[r.length - 1][1] === 3 * N - 1;
const within = (r) => Object.values(r.maxSegBytes).every((v) => v <= 65536) && Object.values(r.afterSeg).every((v) => v.sum <= 65536);
const low = (r) => Object.values(r.afterSeg).every((v) => v.sum >= 65536 * 7 / 8);
check(`g2b retention.maxBytes 65,536 with ${N} then ${2 * N} pipelined sends: .seg files never above maxBytes (sampled every 10 ms, and 2 s after) on master and slave, replay the newest contiguous`,
  within(r1) && within(r2) && tailOk(rep) && tailOk(repB), { r1, r2, replayA: rep.length, replayB: repB.length, replayAfirst: rep[0], replayAlast: rep[rep.length - 1], replayTailContiguousA: tailOk(rep), replayTailContiguousB: tailOk(repB) });
check(`g2b retention.maxBytes: 2 s after each burst, between 7/8 of maxBytes (57,344) and maxBytes on disk (operations: "after a trim between 7/8 of maxBytes and maxBytes stays")`, low(r1) && low(r2),
  { r1: r1.afterSeg, r2: r2.afterSeg });
// seconds
const rs = await burst('sec/v1/x', 200, 0);
const tLast = Date.now();
const seg0 = Object.fromEntries(nodes.map((n) => [n.id, segBytes(n, 'sec')]));
await sleep(10000 - (Date.now() - tLast));
const seg1 = Object.fromEntries(nodes.map((n) => [n.id, segBytes(n, 'sec')]));
const hm = {}; for (const n of nodes) { const m = await metrics(n); hm[n.id] = { messages: metric(m, 'whisker_history_messages{queue="sec/v1"}'), bytes: metric(m, 'whisker_history_bytes{queue="sec/v1"}'), oldest: metric(m, 'whisker_history_oldest_seconds{queue="sec/v1"}') }; }
const rsA = await replayFrom(nodes[0], 'sec/v1/x'); const rsB = await replayFrom(nodes[1], 'sec/v1/x');
check(`g2b retention.seconds 2: 10 s after the last of 200 sends (nothing sent since), no .seg bytes left and whisker_history_messages 0 on master and slave, replays empty`,
  Object.values(seg1).every((v) => v.sum === 0) && Object.values(hm).every((v) => !v.messages) && rsA.length === 0 && rsB.length === 0,
  { ok: rs.filter((x) => x === 'OK').length, segRightAfter: seg0, segAfter10s: seg1, metrics: hm, replayA: rsA.length, replayB: rsB.length, load: up() });
await finish(0);
