/* eslint-disable no-undef, no-empty, @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27): Node 20 global fetch, best-effort cleanup, figures kept for reading */
// Issue 27 item 4: sends in flight at a kill -9, re-sent by the client and answered OK after the restart, are in the
// history exactly once. REPS (10) trials on one broker: pipelined sends (~1/ms), kill -9 at a random moment, restart
// 200 ms later; when all are answered, replay: every OK send once, none twice, nothing never answered OK... in order.
import { makeNodes, start, kill9, mkClient, keyPair, sleep, check, finish } from './harness.mjs';
const REPS = Number(process.env.REPS ?? 10), N = Number(process.env.N ?? 1500);
const nodes = await makeNodes(['a'], { channels: { 'kh/v1': { retention: { seconds: 3600 } } }, maxItemsInQueue: 100000 });
await start(nodes[0]);
const prod = await mkClient(nodes, 'prodK', keyPair(), { sendTimeout: 60000, connectTimeout: 60000 });
const lst = await mkClient(nodes, 'lstK', keyPair(), { sendTimeout: 60000 });
const res = [];
for (let rep = 0; rep < REPS; rep++) {
  const ch = `kh/v1/r${rep}`;
  const ps = []; const killAt = 200 + Math.floor(Math.random() * 800);
  let killed;
  for (let s = 0; s < N; s++) {
    ps.push(prod.send(ch, { s }).then(() => 'OK', (e) => e.code));
    if (s === killAt) killed = (async () => { await kill9(nodes[0]); await sleep(200); await start(nodes[0]); })();
    if (s % 2) await sleep(1);
  }
  await killed;
  const rs = await Promise.all(ps);
  const okIds = rs.map((r, s) => (r === 'OK' ? s : -1)).filter((s) => s >= 0);
  let rep2 = [];
  for (let tries = 0; tries < 3; tries++) { try { rep2 = []; for await (const m of lst.replay(ch)) rep2.push(m.data.s); break; } catch (e) { await sleep(1000); } }
  const set = new Set(rep2);
  const missing = okIds.filter((s) => !set.has(s)).length, twice = rep2.length - set.size;
  let brk = 0; for (let i = 1; i < rep2.length; i++) if (rep2[i] < rep2[i - 1]) brk++;
  res.push({ rep, killAt, ok: okIds.length, failed: rs.length - okIds.length, replay: rep2.length, missing, twice, breaks: brk });
  console.log(JSON.stringify(res.at(-1)));
}
const bad = res.filter((r) => r.missing || r.twice);
check(`4 kill -9 with sends in flight: every OK send in the replay exactly once (${REPS} runs)`, bad.length === 0, { badRuns: bad.length, missingTotal: res.reduce((a, r) => a + r.missing, 0), twiceTotal: res.reduce((a, r) => a + r.twice, 0) });
check('4b replay in send order after the kill (one producer)', res.every((r) => r.breaks === 0), res.map((r) => r.breaks).join(','));
await prod.disconnect(); await lst.disconnect();
await finish(0);
