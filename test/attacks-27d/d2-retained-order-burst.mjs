// Issue 27 item 3 from new angles: gapless bursts on NEW retained channel ids. Docs: SPEC §7 (one connection's sends
// accepted, delivered and retained in the order sent, with retention as without), client.md#replay ("in acceptance
// order (so in order per id)"; "a promoted mirror replays the same history ... the same order for messages one producer
// sent one after the other"). Master a + slave b (configured mode).
// IDS times: a new id rt/v1/n<k>; two producers each send BURST messages to it in ONE event-loop turn (no await between),
// the two producers' bursts started in the same turn too; a listener on rt/v1/* (connected before). Then: per id and per
// producer, the listener's order and the replay's order (from a, and from b alone) equal the send order; the listener's
// sequence per id equals a's replay per id (what was delivered is what is replayed).
import { makeNodes, start, mkClient, keyPair, sleep, check, finish, waitFor, health } from './harness.mjs';
import { execFileSync } from 'node:child_process';

const IDS = Number(process.env.IDS ?? 40), BURST = Number(process.env.BURST ?? 60);
const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up(), { IDS, BURST });
const nodes = await makeNodes(['a', 'b'], { logLevel: 'warn', channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 100000 } } });
const [a, b] = nodes;
await Promise.all(nodes.map(start));
await waitFor(async () => (await health(b)).status === 200, 30000, 200);
const seen = new Map(); // id -> [ "k:n" ]
const L = await mkClient(nodes, 'd2-l', keyPair());
await L.listen('rt/v1/*', (err, m) => { if (err || !m) return; const id = m.id; if (!seen.has(id)) seen.set(id, []); seen.get(id).push(`${m.k}:${m.n}`); }).ready;
const P = [await mkClient(nodes, 'd2-p0', keyPair()), await mkClient(nodes, 'd2-p1', keyPair())];
const res = {};
for (let k = 0; k < IDS; k++) {
  const id = `n${k}-${process.pid}`;
  const ps = [];
  for (let j = 0; j < BURST; j++) for (const [pi, c] of P.entries()) ps.push(c.send(`rt/v1/${id}`, { id, k: pi, n: j }).then(() => 'OK', (e) => e.code));
  for (const x of await Promise.all(ps)) res[x] = (res[x] ?? 0) + 1;
  await sleep(k % 3 === 0 ? 0 : 2);
}
await waitFor(() => [...seen.values()].reduce((s, v) => s + v.length, 0) >= IDS * BURST * 2, 20000, 200);
await sleep(1500);
function breaks(seqs) { let br = 0, ex = null; for (const [id, seq] of seqs) { const last = {}; for (const x of seq) { const [k, n] = x.split(':').map(Number); if (last[k] !== undefined && n < last[k]) { br++; ex ??= `${id}: ${x} after ${k}:${last[k]}`; } last[k] = Math.max(last[k] ?? -1, n); } } return { br, ex }; }
async function replayFrom(n) {
  const c = await mkClient([n], `d2-rep-${n.id}`, keyPair());
  const m = new Map(); let error;
  try { for await (const msg of c.replay('rt/v1/*', {})) { const id = msg.data.id; if (!m.has(id)) m.set(id, []); m.get(id).push(`${msg.data.k}:${msg.data.n}`); } } catch (e) { error = e.code; }
  await c.disconnect(); return { m, error };
}
const ra = await replayFrom(a); const rb = await replayFrom(b);
const lb = breaks(seen), ab = breaks(ra.m), bb = breaks(rb.m);
let listenVsReplay = 0, exDiff = null; for (const [id, seq] of seen) { const r = ra.m.get(id) ?? []; if (r.join() !== seq.join()) { listenVsReplay++; exDiff ??= { id, listened: seq.slice(0, 4), replayed: r.slice(0, 4) }; } }
const total = (m) => [...m.values()].reduce((s, v) => s + v.length, 0);
check('d2 gapless bursts of two producers on new retained ids: listener, a\'s and b\'s replays in send order per producer; listened sequence = replayed sequence per id',
  lb.br + ab.br + bb.br === 0 && listenVsReplay === 0 && !ra.error && !rb.error && total(seen) === IDS * BURST * 2 && total(ra.m) === IDS * BURST * 2,
  { answers: res, listened: total(seen), replayA: total(ra.m), replayB: total(rb.m), breaks: { listener: lb, a: ab, b: bb }, idsWhereListenDiffersFromReplay: listenVsReplay, exDiff, errors: [ra.error, rb.error] });
console.log(up());
for (const c of [...P, L]) await c.disconnect();
await finish(0);
