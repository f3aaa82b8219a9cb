/* eslint-disable no-empty -- outsider attack scripts (issue 27, 2nd round): Node 20 global fetch, best-effort cleanup */
// Found while writing b5: a client whose name is registered with another key (E_AUTH other-key) then calls replay.
// Docs: SPEC §4 (other-key: the client stops dialing, reports once, fails pending sends with E_AUTH); client.md#replay:
// "asked before any broker is connected ... it waits for one, at most sendTimeout (then E_NO_MASTER)".
// Expected: connect() fails E_AUTH within connectTimeout, and replay ends (throws) within sendTimeout.
import { makeNodes, start, mkClient, keyPair, sleep, check, finish } from './harness.mjs';
const CH = 'ok/v1/x';
const [a] = await makeNodes(['a'], { logLevel: 'info', channels: { 'ok/v1': { retention: { seconds: 3600 } } } });
await start(a);
const c1 = await mkClient([a], 'same-name', keyPair(), {}); await c1.send(CH, { i: 1 }); await c1.disconnect();
const t0 = Date.now();
const c2 = await mkClient([a], 'same-name', keyPair(), { connectTimeout: 4000, sendTimeout: 4000 });
const tConn = Date.now() - t0;
const t1 = Date.now();
const r = await Promise.race([(async () => { const out = []; try { for await (const x of c2.replay(CH, {})) out.push(x); return { ended: 'normally', n: out.length }; } catch (e) { return { ended: 'threw', code: e.code }; } })(), sleep(20000).then(() => ({ ended: 'still waiting after 20 s' }))]);
const s = await Promise.race([c2.send(CH, { i: 2 }).then(() => 'OK', (e) => e.code), sleep(20000).then(() => 'still waiting after 20 s')]);
check('b6 name bound to another key: connect fails E_AUTH, then replay and send end with an error within sendTimeout (4 s)', c2.connected?.code === 'E_AUTH' && r.ended === 'threw' && Date.now() - t1 < 12000 && s !== 'OK' && !/still/.test(s),
  { connect: c2.connected, connectMs: tConn, replay: r, replayMs: Date.now() - t1, send: s, errors: c2.errors.slice(0, 2).map((e) => `${e.code} ${e.message}`) });
const h = c2.listen(CH, () => {});
const rd = await Promise.race([h.ready.then(() => 'resolved', (e) => 'rejected ' + e.code), sleep(15000).then(() => 'pending after 15 s')]);
check('b6b [doubt: client.md does not say] listen().ready on that client settles (resolves or rejects) within 15 s', !/pending/.test(rd), { ready: rd });
try { await c2.disconnect(); } catch {}
await finish(0);
