/* eslint-disable no-undef, no-empty, @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27): Node 20 global fetch, best-effort cleanup, figures kept for reading */
// Issue 27 item 3: one connection's sends are accepted, delivered and retained in send order on a retained channel.
// A: pipelined producer (a send every 0-2 ms, 2,000 sends) to a retained channel with a listener: live order breaks, replay order.
// B: two first frames (bursts of 40, 0-1 ms apart) on a new queue, TRIALS times: replay and delivery order.
// C: master a + slave b (configured), pipelined producer; kill -9 a mid-stream, promote b (reload); b's replay: order and once each.
import { makeNodes, start, kill9, writeConfig, cli, mkClient, keyPair, sleep, check, finish, waitFor } from './harness.mjs';
const TRIALS = Number(process.env.TRIALS ?? 20); const PARTS = process.env.PARTS ?? 'ABC';
const channels = { 'fd/v1': { retention: { seconds: 3600 } }, 'nr/v1': { retention: { seconds: 3600 } } };
for (let i = 0; i < TRIALS; i++) channels[`nw${i}/v1`] = { retention: { seconds: 3600 } };
const nodes = await makeNodes(['a', 'b'], { channels, maxItemsInQueue: 100000 });
await Promise.all(nodes.map(start));
const T0 = Date.now(); const log = (...a) => console.error(`[${((Date.now() - T0) / 1000).toFixed(1)}s]`, ...a);
const breaks = (arr) => { let b = 0; for (let i = 1; i < arr.length; i++) if (arr[i] < arr[i - 1]) b++; return b; };
// A
for (const ch of PARTS.includes('A') ? ['fd/v1/1', 'nr/v1/1'] : []) {
  const lst = await mkClient(nodes, 'lstA' + ch.slice(0, 2), keyPair());
  const live = []; const h = lst.listen(ch, (e, m) => { if (!e) live.push(m.s); }); await h.ready;
  const prod = await mkClient(nodes, 'prodA' + ch.slice(0, 2), keyPair(), { sendTimeout: 30000 });
  const N = 2000, ps = [];
  for (let s = 0; s < N; s++) { ps.push(prod.send(ch, { s }).then(() => 'OK', (e) => e.code)); const d = Math.floor(Math.random() * 3); if (d) await sleep(d); else if (s % 3 === 0) await new Promise((r) => setImmediate(r)); }
  log(ch, 'sent'); const rs = await Promise.all(ps); log(ch, 'answered');
  await waitFor(() => live.length >= N, 15000); log(ch, 'live', live.length);
  const rep = []; for await (const m of lst.replay(ch)) rep.push(m.data.s);
  const ok = rs.filter((r) => r === 'OK').length;
  check(`3a ${ch} (${ch.startsWith('fd') ? 'retained' : 'retained, control'}): ${N} pipelined sends, live order and replay order = send order`, breaks(live) === 0 && breaks(rep) === 0 && rep.length === ok && live.length === N,
    { ok, codes: Object.fromEntries([...new Set(rs)].map((c) => [c, rs.filter((x) => x === c).length])), firstNotOk: rs.findIndex((r) => r !== 'OK'), live: live.length, liveBreaks: breaks(live), replay: rep.length, replayBreaks: breaks(rep) });
  await lst.disconnect(); await prod.disconnect(); log(ch, 'done');
}
// B
const prodB = await mkClient(nodes, 'prodB', keyPair(), { sendTimeout: 30000 });
const lstB = await mkClient(nodes, 'lstB', keyPair());
const bad = [];
for (let t = 0; t < TRIALS; t++) {
  log('trial', t);
  const ch = `nw${t}/v1/k`;
  const ps = [];
  for (let i = 0; i < 40; i++) ps.push(prodB.send(ch, { s: i }));
  if (t % 2) await sleep(1); else await new Promise((r) => setImmediate(r));
  for (let i = 40; i < 80; i++) ps.push(prodB.send(ch, { s: i }));
  await Promise.all(ps);
  const rep = []; for await (const m of lstB.replay(ch)) rep.push(m.data.s);
  const live = []; const h = lstB.listen(ch, (e, m) => { if (!e) live.push(m.s); }); await h.ready;
  await waitFor(() => live.length >= 80, 5000, 50); h.close();
  if (breaks(rep) || breaks(live) || rep.length !== 80 || live.length !== 80) bad.push({ t, rep: rep.length, repBreaks: breaks(rep), firstRep: rep.slice(0, 3), live: live.length, liveBreaks: breaks(live), firstLive: live.slice(0, 3) });
}
check(`3b two first bursts on a new queue: stored and delivered in send order (${TRIALS} trials)`, bad.length === 0, { badTrials: bad.length, ex: bad.slice(0, 3) });
await prodB.disconnect(); await lstB.disconnect();
log('B done');
// C: failover in the middle
const lstC = await mkClient(nodes, 'lstC', keyPair());
const live = []; const hC = lstC.listen('fd/v1/2', (e, m) => { if (!e) live.push(m.s); }); await hC.ready;
const prodC = await mkClient(nodes, 'prodC', keyPair(), { sendTimeout: 30000 });
const N = 3000, ps = [];
for (let s = 0; s < N; s++) {
  ps.push(prodC.send('fd/v1/2', { s }).then(() => 'OK', (e) => e.code));
  if (s === 1000) { await kill9(nodes[0]); nodes[1].config.isMaster = true; writeConfig(nodes[1]); await cli(nodes[1], 'reload'); }
  if (s % 2) await sleep(1);
}
log('C sent'); const rs = await Promise.all(ps); log('C answered');
const okIds = rs.map((r, s) => (r === 'OK' ? s : -1)).filter((s) => s >= 0);
await waitFor(() => new Set(live).size >= okIds.length, 15000);
const rep = []; for await (const m of lstC.replay('fd/v1/2')) rep.push(m.data.s);
const repSet = new Set(rep); const missing = okIds.filter((s) => !repSet.has(s)).length; const twice = rep.length - repSet.size;
const firstLive = []; const seenL = new Set(); for (const s of live) if (!seenL.has(s)) { seenL.add(s); firstLive.push(s); }
check('3c failover mid-stream (kill -9 master, slave promoted): promoted replay in send order, every OK send once; live first deliveries in order',
  missing === 0 && twice === 0 && breaks(rep) === 0 && breaks(firstLive) === 0,
  { ok: okIds.length, failed: rs.length - okIds.length, replay: rep.length, missing, twice, replayBreaks: breaks(rep), liveFirst: firstLive.length, liveBreaks: breaks(firstLive) });
await lstC.disconnect(); await prodC.disconnect();
await finish(0);
