/* eslint-disable no-undef, no-empty, @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27): Node 20 global fetch, best-effort cleanup, figures kept for reading */
// Issue 27 item 12, other half: disconnect() right after 500 sends: the pending sends fail E_DISCONNECTED, none hangs,
// and the sends answered OK all reach a listener (those failed may or may not have been written: counted, info).
import { makeNodes, start, mkClient, keyPair, sleep, check, finish, waitFor } from './harness.mjs';
const nodes = await makeNodes(['a', 'b']);
await Promise.all(nodes.map(start));
const lst = await mkClient(nodes, 'lst12', keyPair());
const got = new Set(); const h = lst.listen('ds/v1/1', (e, m) => { if (!e) got.add(m.s); }); await h.ready;
const res = [];
for (let rep = 0; rep < 5; rep++) {
  const p = await mkClient(nodes, 'p12', keyPairOnce());
  const ps = Array.from({ length: 500 }, (_, i) => p.send('ds/v1/1', { s: rep * 1000 + i }).then(() => 'OK', (e) => e.code));
  await sleep(rep * 3);
  const d = p.disconnect();
  const rs = await Promise.race([Promise.all(ps), sleep(10000).then(() => null)]); await d;
  if (!rs) { res.push({ rep, hung: true }); continue; }
  await sleep(1500);
  const codes = {}; rs.forEach((r) => { codes[r] = (codes[r] ?? 0) + 1; });
  const okNotDelivered = rs.filter((r, i) => r === 'OK' && !got.has(rep * 1000 + i)).length;
  const failedButDelivered = rs.filter((r, i) => r !== 'OK' && got.has(rep * 1000 + i)).length;
  res.push({ rep, codes, okNotDelivered, failedButDelivered });
}
check('12b disconnect() with 500 sends pending: every send settles (OK or E_DISCONNECTED), every OK one delivered', res.every((r) => !r.hung && r.okNotDelivered === 0 && Object.keys(r.codes).every((c) => c === 'OK' || c === 'E_DISCONNECTED')), res);
await lst.disconnect();
await finish(0);
function keyPairOnce() { return (globalThis.__k ??= keyPair()); }
