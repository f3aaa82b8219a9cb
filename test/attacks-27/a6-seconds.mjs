/* eslint-disable no-undef, no-empty, @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27): Node 20 global fetch, best-effort cleanup, figures kept for reading */
// Issue 27 item 6: retention.seconds expiry without new sends: the periodic trim (every 5 s) removes the expired files,
// the newest included; whisker_history_messages 0, _oldest_seconds 0, replay empty, within seconds + 5 s (+ slack).
import { makeNodes, start, mkClient, keyPair, sleep, check, finish, metrics } from './harness.mjs';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
const nodes = await makeNodes(['a', 'b'], { channels: { 'ex/v1': { retention: { seconds: 2 } } } });
await Promise.all(nodes.map(start));
const prod = await mkClient(nodes, 'prodE', keyPair(), { sendTimeout: 60000 });
await Promise.all(Array.from({ length: 200 }, (_, s) => prod.send('ex/v1/1', { s, pad: 'q'.repeat(80) })));
const tEnd = Date.now();
const view = async (n) => { const dir = join(n.config.dataDirectory, 'history', 'ex@v1'); let files = [], bytes = 0; try { files = readdirSync(dir); bytes = files.filter((f) => f.endsWith('.seg')).reduce((a, f) => a + statSync(join(dir, f)).size, 0); } catch {}
  const m = await metrics(n); const g = (p) => Object.entries(m ?? {}).filter(([k]) => k.startsWith(p) && k.includes('ex/v1')).map(([, v]) => v)[0];
  return { segBytes: bytes, files: files.length, msgs: g('whisker_history_messages{'), oldest: g('whisker_history_oldest_seconds{'), hbytes: g('whisker_history_bytes{') }; };
const before = await Promise.all(nodes.map(view));
await sleep(1000);
const at1 = await Promise.all(nodes.map(view));
check('6m the mirror holds the history too 1 s after the sends (200 messages on a and b)', at1.every((v) => v.msgs === 200), at1);
const goneAt = {};
while (Date.now() - tEnd < 12000) { const vs = await Promise.all(nodes.map(view)); vs.forEach((v, i) => { if (v.segBytes === 0 && goneAt[nodes[i].id] === undefined) goneAt[nodes[i].id] = ((Date.now() - tEnd) / 1000).toFixed(1); }); await sleep(250); }
check('6t files gone within seconds (2) + one trim period (5 s) + 1.5 s slack after the last send, on master and mirror', Object.keys(goneAt).length === 2 && Object.values(goneAt).every((x) => Number(x) <= 8.5), { goneAtSeconds: goneAt });
const after = await Promise.all(nodes.map(view));
const rep = []; for await (const m of prod.replay('ex/v1/1')) rep.push(m.data.s);
const okNode = (v) => v.segBytes === 0 && (v.msgs ?? 0) === 0 && (v.oldest ?? 0) === 0;
check('6 seconds:2, 12 s after the last send, no new sends: files gone on master and mirror, history metrics 0, replay empty',
  after.every(okNode) && rep.length === 0, { secondsAfter: ((Date.now() - tEnd) / 1000).toFixed(1), before, after, replay: rep.length });
await prod.disconnect();
await finish(0);
