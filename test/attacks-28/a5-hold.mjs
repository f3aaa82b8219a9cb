/* eslint-disable @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 28), kept as written and run */
// Item 2: reservationHold, its reload, 0, maxReservations, idleQueueTimeout, revoke releases, restart.
import { makeNodes, start, cli, mkClient, keyPair, sleep, check, waitFor, cleanup, kill9, stop, writeConfig } from './harness.mjs';
const rules = [{ client: 'easilys-*', read: ['!invoice/*'] }, { client: 'other-*', read: ['!invoice/*'] }];
const nodes = await makeNodes(['a', 'b'], { rules, reservationHold: 4, idleQueueTimeout: 1, limits: { maxReservations: 3 } });
const [a, b] = nodes;
await start(a); await start(b); await sleep(1500);
const kE = keyPair(), kO = keyPair();
const tryOther = async (ch, ns = nodes) => { const o = await mkClient(ns, 'other-x', kO); const errs = []; const h = o.listen(ch, (e) => { if (e) errs.push({ code: e.code, d: e.details }); }); const r = await Promise.race([h.ready.then(() => 'ok', (x) => x.code + ':' + (x.details?.reason ?? '')), sleep(4000).then(() => 'pending')]); await o.disconnect(); return r; };
let e = await mkClient(nodes, 'easilys-a', kE);
await e.listen('invoice/v1/h1', () => {}).ready;
await e.disconnect();
const t0 = Date.now();
check('within hold (4 s): other refused', (await tryOther('invoice/v1/h1')) === 'E_FORBIDDEN:reserved');
// idle queue timeout 1 s: queue forgotten, reservation kept
await sleep(1500);
check('after idleQueueTimeout (1 s) but within hold: still refused', (await tryOther('invoice/v1/h1')) === 'E_FORBIDDEN:reserved', Date.now() - t0);
await sleep(Math.max(0, 4600 - (Date.now() - t0)));
const r1 = await tryOther('invoice/v1/h1');
check('after hold (4 s): other may take it', r1 === 'ok', [r1, Date.now() - t0]);
// now other-x holds h1 for 4 s after its last sub (it disconnected). easilys refused
e = await mkClient(nodes, 'easilys-a', kE);
const eh2 = e.listen('invoice/v1/h2', () => {}); await eh2.ready;
await eh2.close();
// reload hold to 0 while h2 held (easilys closed its sub): released at once
for (const n of nodes) { n.config.reservationHold = 0; writeConfig(n); console.log('reload', n.id, (await cli(n, 'reload')).out.trim()); }
await sleep(1200);
console.log((await cli(a, 'reservations', 'list')).out);
check('hold lowered to 0 by reload: h2 released', (await tryOther('invoice/v1/h2')) === 'ok');
// hold 0: closing the last sub releases at once
const eh3 = e.listen('invoice/v1/h3', () => {}); await eh3.ready;
await eh3.close(); await sleep(200);
check('hold 0: released at once on close', (await tryOther('invoice/v1/h3')) === 'ok');
// raise hold by reload to 30; maxReservations 3
for (const n of nodes) { n.config.reservationHold = 30; writeConfig(n); await cli(n, 'reload'); }
const ids = ['m1', 'm2', 'm3', 'm4'];
const lim = [];
for (const id of ids) { const h = e.listen('invoice/v1/' + id, (err) => { if (err) lim.push({ id, code: err.code, msg: err.message }); }); lim.push({ id, r: await h.ready.then(() => 'ok', (x) => x.code) }); }
console.log('limit:', JSON.stringify(lim), (await cli(a, 'reservations', 'list')).out);
check('limits.maxReservations (3) enforced', lim.some((x) => x.code === 'E_LIMIT'), lim);
// restart master (kill -9) during hold: reservation persisted
await e.disconnect();
await kill9(a); await start(a); await sleep(2000);
console.log('after kill -9 restart', (await cli(a, 'reservations', 'list')).out);
check('kill -9 master within hold: other still refused', (await tryOther('invoice/v1/m1')) === 'E_FORBIDDEN:reserved');
// revoke releases reservations (revoke on slave)
console.log('revoke', (await cli(b, 'keys', 'revoke', 'easilys-a')).out.trim());
await sleep(500);
const la = (await cli(a, 'reservations', 'list')).out, lb = (await cli(b, 'reservations', 'list')).out;
console.log(la, lb);
check('revoke on slave releases the name\'s reservations on master', !/easilys-a/.test(la) && !/easilys-a/.test(lb));
check('after revoke other may take m1', (await tryOther('invoice/v1/m1')) === 'ok');
// release on slave CLI? (documented: on the master)
const rel = await cli(b, 'reservations', 'release', 'invoice/v1/m1');
console.log('release on slave:', rel.code, rel.out.trim());
await cleanup();
process.exit(0);
