// Order of one connection's sends across a master's kill -9 when some of them end E_NO_MASTER with storedBy (atk27c D5).
// Master a + slave b (configured mode), a retained channel, one producer sending every 2 ms to both (sendTimeout 1.5 s)
// WITHOUT pausing: a killed -9, restarted DOWN ms later (it is master again), the producer goes on. The sends made while
// a was down end E_NO_MASTER with storedBy b; b offers them to a once it follows it again (operations.md#what-each-broker-does
// "A master that was down gets back, from each slave ..., the messages only that slave stored meanwhile ...; it then
// delivers them"). Promises: SPEC §7 "the sends of one connection are accepted in the order sent (pipelined or not,
// retained channel or not); first deliveries of one id leave in acceptance order"; operations.md#history-catch-up "Across
// failovers the brokers keep the same records, each connection's in the order it sent them (SPEC §7)".
// Measures: a's and b's replay and a listener's first deliveries, per producer: records out of send order, split into
// E_NO_MASTER-answered ones and OK ones.
import { makeNodes, start, kill9, mkClient, keyPair, sleep, check, finish, waitFor, health } from './harness.mjs';
import { execFileSync } from 'node:child_process';

const DOWN = Number(process.env.DOWN ?? 4000);
const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up(), { DOWN });
const nodes = await makeNodes(['a', 'b'], { logLevel: 'warn', channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 100000 } } });
const [a, b] = nodes;
await Promise.all(nodes.map(start));
await waitFor(async () => (await health(b)).status === 200, 30000, 200);
const CH = 'rt/v1/x';
const firsts = []; const seen = new Set();
const L = await mkClient(nodes, 'd9-l', keyPair(), { sendTimeout: 5000 });
await L.listen(CH, (err, m) => { if (!err && m && !seen.has(m.n)) { seen.add(m.n); firsts.push(m.n); } }).ready;
const P = await mkClient(nodes, 'd9-p', keyPair(), { sendTimeout: 1500 });
const res = []; const pend = []; let run = true;
const loop = (async () => { let n = 0; while (run) { const j = n++; pend.push(new Promise((r) => P.send(CH, { n: j }, (err) => { res[j] = err ? `${err.code}:${(err.info?.storedBy ?? []).join('')}` : 'OK'; r(); }))); await sleep(2); } })();
await sleep(2000);
await kill9(a); await sleep(DOWN); await start(a);
await sleep(6000);
run = false; await loop; await Promise.all(pend);
const want = res.map((x, i) => [x, i]).filter(([x]) => x === 'OK' || x.includes('b')).map(([, i]) => i);
await waitFor(() => want.every((i) => seen.has(i)), 20000, 200);
await sleep(1000);
async function replayFrom(n) { const c = await mkClient([n], `d9-r-${n.id}`, keyPair()); const out = []; try { for await (const m of c.replay(CH, {})) out.push(m.data.n); } catch (e) { out.error = e.code; } await c.disconnect(); return out; }
function breaks(seq) { let max = -1; const br = { noMaster: 0, ok: 0, ex: null }; for (const n of seq) { if (n < max) { if (res[n] === 'OK') br.ok++; else br.noMaster++; br.ex ??= `${n} (${res[n]}) after ${max} (${res[max]})`; } max = Math.max(max, n); } return br; }
const ra = await replayFrom(a), rb = await replayFrom(b);
const tally = {}; for (const x of res) tally[x] = (tally[x] ?? 0) + 1;
const bl = breaks(firsts), ba = breaks(ra), bb = breaks(rb);
check('d9 one connection\'s sends across kill -9 + restart of the master, some E_NO_MASTER (storedBy b): a\'s and b\'s history and the listener\'s first deliveries in send order',
  bl.ok + bl.noMaster + ba.ok + ba.noMaster + bb.ok + bb.noMaster === 0,
  { answers: tally, listened: firsts.length, notListened: want.filter((i) => !seen.has(i)).length, replayA: ra.length, replayB: rb.length, outOfSendOrder: { listener: bl, a: ba, b: bb } });
console.log(up());
await P.disconnect(); await L.disconnect();
await finish(0);
