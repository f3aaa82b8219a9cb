/* eslint-disable no-undef, no-empty, @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27): Node 20 global fetch, best-effort cleanup, figures kept for reading */
// Issue 27 item 8: listen(ch, { since }) while a large retained backlog (15,000; also 10,500 and 25,000) waits for a
// first subscriber (maxItemsInQueue 50,000): no duplicate, no gap; then live sends continue without gap or duplicate.
import { makeNodes, start, mkClient, keyPair, sleep, check, finish, waitFor } from './harness.mjs';
const SIZES = (process.env.SIZES ?? '15000,10500').split(',').map(Number);
const nodes = await makeNodes(['a'], { channels: { 'bk/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 50000 } }, maxItemsInQueue: 50000 });
await start(nodes[0]);
const prod = await mkClient(nodes, 'prodB', keyPair(), { sendTimeout: 120000, maxBufferedMessages: 60000 });
for (const N of SIZES) {
  const ch = `bk/v1/n${N}`;
  for (let k = 0; k < N; k += 2500) await Promise.all(Array.from({ length: Math.min(2500, N - k) }, (_, i) => prod.send(ch, { s: k + i })));
  const lst = await mkClient(nodes, `lst${N}`, keyPair());
  const got = [];
  const h = lst.listen(ch, { since: 0 }, (e, m) => { if (!e) got.push(m.s); });
  await waitFor(() => got.length >= N, 90000, 200);
  // live continues: 200 more sends
  await Promise.all(Array.from({ length: 200 }, (_, i) => prod.send(ch, { s: N + i })));
  await waitFor(() => got.length >= N + 200, 20000, 100);
  await sleep(2000);
  const set = new Set(got); const dup = got.length - set.size; let gap = 0; for (let s = 0; s < N + 200; s++) if (!set.has(s)) gap++;
  let brk = 0; for (let i = 1; i < got.length; i++) if (got[i] < got[i - 1]) brk++;
  check(`8 listen since 0 over ${N} waiting retained messages: no duplicate, no gap, in order`, dup === 0 && gap === 0 && brk === 0, { received: got.length, expected: N + 200, duplicates: dup, missing: gap, breaks: brk });
  h.close(); await lst.disconnect();
}
await prod.disconnect();
await finish(0);
