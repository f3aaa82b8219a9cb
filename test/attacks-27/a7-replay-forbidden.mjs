/* eslint-disable no-undef, no-empty, @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27): Node 20 global fetch, best-effort cleanup, figures kept for reading */
// Issue 27 item 7: for await (const m of mq.replay(ch)) on a forbidden channel, or on another name's reserved id,
// throws E_FORBIDDEN (as the handler form does), not an empty history.
import { makeNodes, start, mkClient, keyPair, sleep, check, finish } from './harness.mjs';
const nodes = await makeNodes(['a'], {
  channels: { 'ev/v1': { retention: { seconds: 3600 } }, 'sec/v1': { retention: { seconds: 3600 } }, 'res/v1': { retention: { seconds: 3600 } } },
  rules: [ { client: 'owner', read: ['ev/*', 'sec/*', '!res/v1/*'], write: ['ev/*', 'sec/*', 'res/*'] },
           { client: 'other', read: ['ev/*', '!res/v1/*'], write: ['ev/*'] } ], defaultPolicy: 'deny' });
await start(nodes[0]);
const owner = await mkClient(nodes, 'owner', keyPair());
const other = await mkClient(nodes, 'other', keyPair());
for (let i = 0; i < 3; i++) { await owner.send('sec/v1/1', { i }); await owner.send('res/v1/k', { i }); }
const hh = owner.listen('res/v1/k', () => {}); await hh.ready; // reserves res/v1/k for owner
async function streamForm(mq, ch) { let n = 0; try { for await (const m of mq.replay(ch)) { void m; n++; } return { ok: true, n }; } catch (e) { return { code: e.code, n, reason: e.details?.reason }; } }
async function handlerForm(mq, ch) { let n = 0, herr; try { const r = mq.replay(ch, {}, (e) => { if (e) herr = e; else n++; }); const c = await r.done; return { ok: true, n: c, herr: herr?.code }; } catch (e) { return { code: e.code, n, reason: e.details?.reason }; } }
for (let rep = 0; rep < 3; rep++) {
  const s1 = await streamForm(other, 'sec/v1/1');
  check(`7a[${rep}] stream replay of a channel 'other' may not read throws E_FORBIDDEN`, s1.code === 'E_FORBIDDEN', s1);
  const s2 = await streamForm(other, 'res/v1/k');
  check(`7b[${rep}] stream replay of owner's reserved id throws E_FORBIDDEN (reserved)`, s2.code === 'E_FORBIDDEN', s2);
  const s3 = await streamForm(other, 'sec/v1/*');
  check(`7c[${rep}] stream replay of forbidden '*' throws E_FORBIDDEN`, s3.code === 'E_FORBIDDEN', s3);
}
const h1 = await handlerForm(other, 'sec/v1/1'), h2 = await handlerForm(other, 'res/v1/k');
check('7d handler form refuses both (E_FORBIDDEN via done or handler err)', (h1.code === 'E_FORBIDDEN' || h1.herr === 'E_FORBIDDEN') && (h2.code === 'E_FORBIDDEN' || h2.herr === 'E_FORBIDDEN'), { h1, h2 });
const s4 = await streamForm(other, 'nohist/v1/1');
check('7e stream replay without retention throws E_NO_HISTORY (or E_FORBIDDEN: no read right)', ['E_NO_HISTORY', 'E_FORBIDDEN'].includes(s4.code), s4);
const s5 = await streamForm(owner, 'res/v1/k');
check('7f owner can stream-replay its reserved id (3 messages)', s5.ok && s5.n === 3, s5);
await owner.disconnect(); await other.disconnect();
await finish(0);
