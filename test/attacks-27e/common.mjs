// Shared pieces of the atk27e scripts: pipelining producers, a listener recording first deliveries, replays, and the checks
// (send order per producer, nothing answered lost, nothing twice, replays equal).
import { mkClient, keyPair, sleep, check, health } from './harness.mjs';
import { execFileSync } from 'node:child_process';
export const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
export const alive = (n) => !!n.proc && n.proc.exitCode === null && n.proc.signalCode === null;
export async function masterOf(nodes) { for (const n of nodes) if (alive(n) && (await health(n)).body?.role === 'master') return n; return null; }
export async function listener(nodes, ch, name = 'l') {
  const L = await mkClient(nodes, `${name}-${process.pid}`, keyPair(), { sendTimeout: 5000 });
  L.firsts = []; L.seen = new Set(); L.count = 0; L.at = new Map();
  await L.listen(ch, (err, m) => { if (!err && m) { L.count++; const k = m.p + ':' + m.n; if (!L.seen.has(k)) { L.seen.add(k); L.at.set(k, Date.now()); L.firsts.push([m.p, m.n]); } } }).ready;
  return L;
}
// producers: P pipelining clients, each sends BURST messages back to back every GAP ms
export async function producers(nodes, ch, { P = 2, burst = 1, gap = 2, sendTimeout = 1500, name = 'p', first = 0 } = {}) {
  const ps = [];
  for (let i = first; i < first + P; i++) {
    const c = await mkClient(nodes, `${name}${i}-${process.pid}`, keyPair(), { sendTimeout });
    const pr = { i, c, res: [], t: [], pend: [], run: true };
    pr.loop = (async () => { let n = 0; while (pr.run) { for (let b = 0; b < burst; b++) { const j = n++; pr.t[j] = Date.now(); pr.pend.push(new Promise((r) => c.send(ch, { p: i, n: j }, (err) => { pr.res[j] = err ? `${err.code}:${(err.info?.storedBy ?? []).join('')}` : 'OK'; r(); }))); } await sleep(gap); } })();
    ps.push(pr);
  }
  ps.stop = async () => { for (const pr of ps) pr.run = false; for (const pr of ps) { await pr.loop; await Promise.all(pr.pend); } };
  return ps;
}
export const accepted = (x) => x === 'OK' || /^[A-Z_]+:.+/.test(x); // OK, or an error naming a broker that stored it
export async function replayFrom(n, ch) { const c = await mkClient([n], `r-${n.id}-${Date.now()}`, keyPair()); const out = []; try { for await (const m of c.replay(ch, {})) out.push([m.data.p, m.data.n]); } catch (e) { out.error = e.code; } await c.disconnect(); return out; }
// order breaks per producer, twice, missing (of the accepted ones)
export function analyse(seq, ps) {
  const max = {}; const seen = new Set(); const r = { len: seq.length, okBreaks: 0, noMasterBreaks: 0, twice: 0, missingOK: 0, missingStored: 0, ex: null };
  for (const [p, n] of seq) {
    const k = p + ':' + n; if (seen.has(k)) { r.twice++; continue; } seen.add(k);
    if (max[p] !== undefined && n < max[p]) { if (ps[p].res[n] === 'OK') r.okBreaks++; else r.noMasterBreaks++; r.ex ??= `${p}:${n} (${ps[p].res[n]}) after ${p}:${max[p]} (${ps[p].res[max[p]]})`; }
    max[p] = Math.max(max[p] ?? -1, n);
  }
  for (const pr of ps) pr.res.forEach((x, n) => { if (!seen.has(pr.i + ':' + n)) { if (x === 'OK') r.missingOK++; else if (accepted(x)) r.missingStored++; } });
  return r;
}
export function tally(ps) { const t = {}; for (const pr of ps) for (const x of pr.res) t[x] = (t[x] ?? 0) + 1; return t; }
export const bad = (r) => r.okBreaks + r.noMasterBreaks + r.twice + r.missingOK + r.missingStored;
export function same(a, b) { if (a.length !== b.length) return false; const s = new Set(a.map(([p, n]) => p + ':' + n)); return b.every(([p, n]) => s.has(p + ':' + n)); }
export async function verdict(name, nodes, ch, ps, L, extra = {}) {
  const want = []; for (const pr of ps) pr.res.forEach((x, n) => { if (accepted(x)) want.push(pr.i + ':' + n); });
  const t0 = Date.now(); while (Date.now() - t0 < 30000 && !want.every((k) => L.seen.has(k))) await sleep(250);
  await sleep(1000);
  const out = { answers: tally(ps), listener: analyse(L.firsts, ps) }; const reps = {};
  for (const n of nodes) if (alive(n)) { reps[n.id] = await replayFrom(n, ch); out[n.id] = analyse(reps[n.id], ps); if (reps[n.id].error) out[n.id].replayError = reps[n.id].error; }
  const ids = Object.keys(reps); out.replaysSameSet = ids.every((i) => same(reps[ids[0]], reps[i]));
  const total = bad(out.listener) + ids.reduce((s, i) => s + bad(out[i]), 0);
  check(name, total === 0 && out.replaysSameSet, { ...extra, ...out, load: up() });
  return total === 0 && out.replaysSameSet;
}
// a consumer (prefetch 10) acking each delivery; records first deliveries per key
export async function consumer(nodes, ch, name = 'c') {
  const C = await mkClient(nodes, `${name}-${process.pid}`, keyPair(), { sendTimeout: 5000 });
  C.firsts = []; C.seen = new Set(); C.count = 0; C.t0 = Date.now();
  C.h = C.consume(ch, { prefetch: 10 }, (err, m, done) => { if (err) return; C.count++; C.last = Date.now(); const k = m.p + ':' + m.n; if (!C.seen.has(k)) { C.seen.add(k); C.firsts.push([m.p, m.n]); } done(); });
  await C.h.ready;
  return C;
}
// wait until the consumer has every accepted send, or made no progress for DRAIN ms (default 40 s)
export async function drain(C, ps) {
  const want = ps.flatMap((pr) => pr.res.map((x, n) => [pr.i, n, x])).filter(([, , x]) => accepted(x));
  let last = -1, since = Date.now();
  const ts = Date.now(); while (!want.every(([p, n]) => C.seen.has(p + ':' + n))) { if (C.count !== last) { last = C.count; since = Date.now(); } if (Date.now() - since > Number(process.env.DRAIN ?? 40000)) break; await sleep(500); }
  C.drainInfo = { lastDeliveryMsBeforeEnd: Date.now() - (C.last ?? C.t0), waitedMs: Date.now() - ts };
}
