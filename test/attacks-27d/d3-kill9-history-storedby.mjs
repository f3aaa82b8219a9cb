// Issue 27 item 4 and doubt D4 (atk27c), from a new angle: master a + slave b (configured mode, so b is never promoted),
// a retained channel, two producers pipelining WITHOUT a gap (BURST sends a turn, every 5 ms) to both brokers.
// Phase 1 (sendTimeout 15 s): kill -9 a, restart it after DOWN1 ms: the sends in flight wait and are answered by a after
// its restart. Docs: configuration.md#retention ("After any stop (kill -9 included) the start makes the two agree ...
// so every send answered OK is in the history once"). Check a's and b's replay: every OK send once, per-producer order.
// Phase 2 (sendTimeout 1.5 s): kill -9 a, leave it down DOWN2 ms: sends end E_NO_MASTER. Docs: client.md#send ("If no
// master answered within sendTimeout: E_NO_MASTER, with info.storedBy naming the slaves that stored it. A failed send's
// error carries that send's own info (err.info, in the callback form too)"). Check each E_NO_MASTER's err.info.storedBy
// against b's replay read from b alone while a is still down (what b stored), and that err.info is the send's own.
import { makeNodes, start, kill9, mkClient, keyPair, sleep, check, finish, waitFor, health } from './harness.mjs';
import { execFileSync } from 'node:child_process';

const SINGLE = !!process.env.SINGLE; // SINGLE=1: broker a alone (no mirror), phase 1 only: every in-flight send is re-sent to a
const BURST = Number(process.env.BURST ?? 10), DOWN1 = Number(process.env.DOWN1 ?? 3000), DOWN2 = Number(process.env.DOWN2 ?? 5000);
const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up(), { BURST, DOWN1, DOWN2 });
const nodes = await makeNodes(SINGLE ? ['a'] : ['a', 'b'], { logLevel: 'warn', channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 200000 } } });
const [a, b] = nodes;
await Promise.all(nodes.map(start));
if (!SINGLE) await waitFor(async () => (await health(b)).status === 200, 30000, 200);
const CH = 'rt/v1/x';

function producers(sendTimeout, tag) {
  const st = { res: [], pend: [], run: true, clients: [] };
  st.loops = [0, 1].map(async (k) => {
    const c = await mkClient(nodes, `d3-${tag}-p${k}`, keyPair(), { sendTimeout });
    st.clients.push(c);
    let i = 0;
    while (st.run) {
      for (let j = 0; j < BURST; j++) {
        const n = i++; const rec = { k, n, tSend: Date.now() }; st.res.push(rec);
        st.pend.push(new Promise((r) => c.send(CH, { t: tag, k, n }, (err, _x, info) => {
          rec.code = err ? err.code : 'OK'; rec.tAns = Date.now();
          rec.storedBy = (err?.info?.storedBy ?? []).join('');
          rec.infoId = err ? err.info?.messageId : info?.messageId;
          rec.thirdId = info?.messageId; rec.errObj = err; r();
        })));
      }
      await sleep(5);
    }
  });
  return st;
}
async function replayFrom(n) {
  const c = await mkClient([n], `d3-rep-${n.id}-${Date.now()}`, keyPair(), { sendTimeout: 10000 });
  const out = [];
  try { for await (const m of c.replay(CH, {})) out.push(`${m.data.t}:${m.data.k}:${m.data.n}`); } catch (e) { out.error = `${e.code} ${e.message}`; }
  await c.disconnect(); return out;
}
function judge(rep, oks, tag) {
  const cnt = new Map(); for (const x of rep) cnt.set(x, (cnt.get(x) ?? 0) + 1);
  const missing = oks.filter((o) => !cnt.has(`${tag}:${o.k}:${o.n}`));
  const twice = [...cnt].filter(([, v]) => v > 1).length;
  let orderBreaks = 0; const last = {};
  for (const x of rep) { const [t, k, n] = x.split(':'); if (t !== tag) continue; if (last[k] !== undefined && Number(n) < last[k]) orderBreaks++; last[k] = Math.max(last[k] ?? -1, Number(n)); }
  return { records: rep.length, error: rep.error, missing: missing.length, missingEx: missing.slice(0, 4).map((o) => `${o.k}:${o.n}`), twice, orderBreaks };
}

// Phase 1
const p1 = producers(15000, 'p1');
await sleep(2000);
const tKill1 = Date.now(); await kill9(a);
await sleep(DOWN1); await start(a); const tUp1 = Date.now();
await sleep(3000); p1.run = false; await Promise.all(p1.loops); await Promise.all(p1.pend);
await sleep(2000);
const t1 = {}; for (const r of p1.res) t1[r.code] = (t1[r.code] ?? 0) + 1;
const inFlight = p1.res.filter((r) => r.tSend < tKill1 && r.tAns > tUp1 && r.code === 'OK').length;
const oks1 = p1.res.filter((r) => r.code === 'OK');
const ra1 = judge(await replayFrom(a), oks1, 'p1');
const rb1 = SINGLE ? { missing: 0, twice: 0, orderBreaks: 0, records: 'no b' } : judge(await replayFrom(b), oks1, 'p1');
check('d3.1 kill -9 of the master under gapless pipelined sends, restarted within sendTimeout: every OK send in a\'s and b\'s history once, in send order per producer',
  ra1.missing + ra1.twice + ra1.orderBreaks + rb1.missing + rb1.twice + rb1.orderBreaks === 0 && !ra1.error && !rb1.error,
  { answers: t1, sentBeforeKillAnsweredAfterRestart: inFlight, a: ra1, b: rb1 });
for (const c of p1.clients) await c.disconnect();
if (SINGLE) { console.log(up()); await finish(0); }

// Phase 2
const p2 = producers(1500, 'p2');
await sleep(2000);
const tKill2 = Date.now(); await kill9(a);
await sleep(DOWN2);
p2.run = false; await Promise.all(p2.loops);
await Promise.all(p2.pend);
const rb2raw = await replayFrom(b); // a is down: b's own history
const inB = new Set(rb2raw.filter((x) => x.startsWith('p2:')));
const t2 = {}; for (const r of p2.res) { const key = r.code + (r.storedBy ? ':' + r.storedBy : ''); t2[key] = (t2[key] ?? 0) + 1; }
const nm = p2.res.filter((r) => r.code === 'E_NO_MASTER');
const nmEmptyButInB = nm.filter((r) => !r.storedBy && inB.has(`p2:${r.k}:${r.n}`));
const nmNamedButNotInB = nm.filter((r) => r.storedBy.includes('b') && !inB.has(`p2:${r.k}:${r.n}`));
const sharedErr = new Set(nm.map((r) => r.errObj)).size;
const infoMismatch = nm.filter((r) => !r.infoId || (r.thirdId && r.thirdId !== r.infoId)).length;
const ids = new Set(nm.map((r) => r.infoId)).size;
const ex = nmEmptyButInB.slice(0, 4).map((r) => ({ id: `${r.k}:${r.n}`, sentMsAfterKill: r.tSend - tKill2, answeredMsAfterKill: r.tAns - tKill2 }));
check('d3.2 E_NO_MASTER with the master killed -9: err.info.storedBy names b exactly for the sends b stored (b read alone while a is down); each error its own, with its own info',
  nmEmptyButInB.length === 0 && nmNamedButNotInB.length === 0 && sharedErr === nm.length && infoMismatch === 0 && ids === nm.length,
  { answers: t2, noMaster: nm.length, distinctErrorObjects: sharedErr, distinctInfoIds: ids, infoMismatch, emptyStoredByButInB: nmEmptyButInB.length, ex, namedBButNotInB: nmNamedButNotInB.length, bRecordsP2: inB.size });
// a back: the OK sends of phase 2 and what b stored are delivered from a's history; OK all in a's history
await start(a); await sleep(3000);
const ra2 = judge(await replayFrom(a), p2.res.filter((r) => r.code === 'OK'), 'p2');
check('d3.2b a restarted: every OK send of phase 2 in its history once, in order', ra2.missing + ra2.twice + ra2.orderBreaks === 0 && !ra2.error, ra2);
for (const c of p2.clients) await c.disconnect();
console.log(up(), 'tKill2', tKill2 - tKill1);
await finish(0);
