/* eslint-disable no-undef, no-empty, @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27): Node 20 global fetch, best-effort cleanup, figures kept for reading */
// Issue 27 item 5: retention.maxBytes holds at any moment whatever the batching: 500 and 1,000 pipelined sends
// (~380 B each) with maxBytes 65,536. The .seg files are summed every few ms during the burst and after; the metric
// whisker_history_bytes after; the replay is still in order and ends with the last send.
import { makeNodes, start, mkClient, keyPair, sleep, check, finish, metrics } from './harness.mjs';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
const MAX = 65536;
const nodes = await makeNodes(['a'], { channels: { 'mb/v1': { retention: { maxBytes: MAX } }, 'mc/v1': { retention: { maxBytes: MAX, seconds: 3600 } } }, maxItemsInQueue: 100000 });
await start(nodes[0]);
const hdir = (ep) => join(nodes[0].config.dataDirectory, 'history', ep);
function segBytes(ep) { try { return readdirSync(hdir(ep)).filter((f) => f.endsWith('.seg')).reduce((a, f) => a + statSync(join(hdir(ep), f)).size, 0); } catch { return 0; } }
const prod = await mkClient(nodes, 'prodM', keyPair(), { sendTimeout: 60000 });
for (const [ep, N, id] of [['mb@v1', 500, 'a'], ['mb@v1', 1000, 'b'], ['mc@v1', 1000, 'c'], ['mc@v1', 3000, 'd']]) {
  const ch = ep.replace('@', '/') + '/' + id;
  let max = 0, sampling = true;
  const sampler = (async () => { while (sampling) { max = Math.max(max, segBytes(ep)); await sleep(3); } })();
  const ps = []; for (let s = 0; s < N; s++) ps.push(prod.send(ch, { s, pad: 'p'.repeat(300) }).then(() => 'OK', (e) => e.code));
  const rs = await Promise.all(ps);
  await sleep(300); sampling = false; await sampler;
  const after = segBytes(ep);
  const m = await metrics(nodes[0]);
  const metricBytes = Object.entries(m ?? {}).filter(([k]) => k.startsWith('whisker_history_bytes') && k.includes(ep.replace('@', '/'))).map(([, v]) => v)[0];
  const rep = []; for await (const msg of prod.replay(ch)) rep.push(msg.data.s);
  let brk = 0; for (let i = 1; i < rep.length; i++) if (rep[i] < rep[i - 1]) brk++;
  const files = readdirSync(hdir(ep)).filter((f) => f.endsWith('.seg')).length;
  check(`5 ${ep} maxBytes ${MAX}, ${N} pipelined sends: .seg total never > maxBytes (sampled every ~3 ms) and metric within it`,
    max <= MAX && after <= MAX && (metricBytes ?? 0) <= MAX && brk === 0 && rep.at(-1) === N - 1,
    { ok: rs.filter((r) => r === 'OK').length, maxSeenBytes: max, afterBytes: after, metricBytes, segFiles: files, replayed: rep.length, replayLast: rep.at(-1), breaks: brk });
}
await prod.disconnect();
await finish(0);
