/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// The atk27g scripts reuse atk27e's shared pieces (pipelining producers, listener, consumer, replays, order/loss checks)
// and the attacks harness (real broker processes, etcd, clients from dist/), plus a few helpers of their own.
export * from '../attacks-27e/common.mjs';
export * from '../attacks/harness.mjs';
import { health, metrics, metric, sleep } from '../attacks/harness.mjs';
import { alive } from '../attacks-27e/common.mjs';

// every live broker's role as /health says it, one string: "a:master b:slave c:-"
export async function roles(nodes) {
  const out = [];
  for (const n of nodes) out.push(`${n.id}:${alive(n) ? ((await health(n)).body?.role ?? '?') : '-'}`);
  return out.join(' ');
}
// sample the brokers' /health and whisker_role every STEP ms until stop(); keeps the worst (most masters at once)
export function sampler(nodes, step = 100) {
  const s = { run: true, maxMasters: 0, samples: 0, twoMasters: [], firstMasterAt: null, t0: Date.now() };
  s.loop = (async () => {
    while (s.run) {
      const ms = []; const mr = [];
      await Promise.all(nodes.map(async (n) => {
        if (!alive(n)) return;
        const [h, m] = await Promise.all([health(n), metrics(n)]);
        if (h.body?.role === 'master') ms.push(n.id);
        if (metric(m, 'whisker_role') === 1) mr.push(n.id);
      }));
      s.samples++;
      const k = Math.max(ms.length, mr.length);
      if (k > s.maxMasters) s.maxMasters = k;
      if (k >= 2) s.twoMasters.push(`${Date.now() - s.t0}ms health=${ms} role=${mr}`);
      if (k >= 1 && s.firstMasterAt === null) s.firstMasterAt = Date.now();
      await sleep(step);
    }
  })();
  s.stop = async () => { s.run = false; await s.loop; return s; };
  return s;
}
// /health with a 1 s time limit (a SIGSTOPped broker accepts the TCP connection and never answers: fetch alone waits forever)
export async function healthT(n, ms = 1000) { try { const r = await fetch(`http://127.0.0.1:${n.mport}/health`, { signal: AbortSignal.timeout(ms) }); return { status: r.status, body: await r.json() }; } catch (e) { return { status: 0, body: String(e) }; } }
export async function masterOfT(nodes) { for (const n of nodes) if (alive(n) && (await healthT(n)).body?.role === 'master') return n; return null; }
