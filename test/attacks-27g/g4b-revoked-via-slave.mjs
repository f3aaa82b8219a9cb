/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// Scenario 4, keys: a master a and a slave b (configured mode). Client K (its own key) connects to both and sends OK
// (first-use registration, spread to b). `whisker keys revoke K` on ON (default a, the master; ON=b on the slave); AWAY=1:
// the slave b is stopped (SIGTERM) before the revocation and started again after it (it learns it from its link).
// Then, through the slave only: K's key connecting to b alone is refused (E_AUTH, reason revoked); sends K makes to the
// pair after the revocation are stored by none (a listener on both gets none of them, whisker_queue_depth 0 on b).
// Promises: operations.md#keys-on-mirrors "Every broker that applied it closes the name's connections and refuses the key
// from then on, so nothing the client sends is stored or delivered afterwards through any mirror"; client.md#keys.
import { makeNodes, start, stop, sleep, finish, waitFor, check, cli, mkClient, keyPair, up, metrics, metric } from './common.mjs';
const ON = process.env.ON ?? 'a'; const AWAY = !!process.env.AWAY;
console.log('start', new Date().toISOString(), up(), { ON, AWAY });
const nodes = await makeNodes(['a', 'b'], { logLevel: 'info', heartbeatTimeout: 2 });
const [A, B] = nodes;
await Promise.all(nodes.map(start));
await waitFor(() => /"msg":"in step with the master/.test(B.log), 30000, 100);
const key = keyPair(); const name = `k-${process.pid}`;
const K = await mkClient(nodes, name, key, { sendTimeout: 3000 });
const L = await mkClient(nodes, `l-${process.pid}`, keyPair());
const heard = []; await L.listen('rv/v1/x', (err, m) => { if (!err && m) heard.push(m.n); }).ready;
const before = await K.send('rv/v1/x', { n: -1 }).then(() => 'OK', (e) => e.code);
await sleep(500);
if (AWAY) await stop(B);
const r = await cli(nodes.find((n) => n.id === ON), 'keys', 'revoke', name);
await sleep(300);
if (AWAY) { const ms = B.log.length; await start(B); await waitFor(() => /"msg":"in step with the master/.test(B.log.slice(ms)), 30000, 100); await sleep(1000); }
// K keeps sending (it may be closed on both): each send must end stored by none
const after = []; for (let i = 0; i < 20; i++) after.push(K.send('rv/v1/x', { n: i }).then(() => 'OK', (e) => `${e.code}:${(e.info?.storedBy ?? []).join('')}:${e.details?.reason ?? ''}`));
const afterRes = await Promise.all(after);
// the key through the slave alone
const K2 = await mkClient([B], name, key, { connectTimeout: 3000, sendTimeout: 2000 });
const k2send = K2.connected ? await K2.send('rv/v1/x', { n: 100 }).then(() => 'OK', (e) => `${e.code}:${(e.info?.storedBy ?? []).join('')}`) : 'not connected';
// and a new client with the same name and a new key, through the slave alone (the name stays bound: other-key, or revoked)
await sleep(2000);
const depthB = metric(await metrics(B), 'whisker_queue_depth'); const depthA = metric(await metrics(A), 'whisker_queue_depth');
const heardAfter = heard.filter((n) => n >= 0);
check(`g4b key revoked on ${ON}${AWAY ? ' while the slave was stopped' : ''}: through the slave alone the key is refused (E_AUTH revoked), and nothing K sends after is stored or delivered`,
  before === 'OK' && K2.connected?.code === 'E_AUTH' && heardAfter.length === 0 && afterRes.every((x) => x !== 'OK' && !/^[A-Z_]+:[ab]+:/.test(x)) && !depthB,
  { revoke: `${r.code} ${r.out.trim().slice(0, 200)}`, before, k2connect: K2.connected, k2errors: K2.errors.slice(0, 2).map((e) => `${e.code} ${e.details?.reason ?? ''}`), k2send,
    afterAnswers: [...new Set(afterRes)], heardAfter: heardAfter.length, depthA, depthB, load: up() });
await finish(0);
