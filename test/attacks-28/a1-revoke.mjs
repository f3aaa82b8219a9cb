/* eslint-disable @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 28), kept as written and run */
// Item 1: revoke on the slave (and on the master), then connect and send through each broker.
import { makeNodes, start, cli, mkClient, keyPair, sleep, check, waitFor, cleanup, kill9 } from './harness.mjs';
const [a, b] = await makeNodes(['a', 'b']);
await start(a); await start(b); await sleep(1500);
const k = keyPair();
const got = [];
const lis = await mkClient([a, b], 'lis', keyPair());
const h = lis.listen('t/v1/x', (err, msg) => { if (!err) got.push(msg); });
await h.ready;
const svc = await mkClient([a, b], 'svc', k);
check('svc connects', svc.connected === null, svc.connected);
await svc.send('t/v1/x', 'before');
await sleep(500);
let la = await cli(a, 'keys', 'list'), lb = await cli(b, 'keys', 'list');
console.log(la.out, lb.out);
check('keys list shows svc on both after first-use', /svc/.test(la.out) && /svc/.test(lb.out));
const t0 = Date.now();
const r = await cli(b, 'keys', 'revoke', 'svc');
console.log('revoke on slave:', r.code, r.out.trim(), Date.now() - t0, 'ms');
check('revoke on slave names confirmations', /confirmed by the peers a/.test(r.out) && !/NOT/.test(r.out), r.out);
const sendRes = await svc.send('t/v1/x', 'after').then(() => 'ok', (e) => e.code + ' ' + JSON.stringify(e.details ?? null));
console.log('send after revoke:', sendRes, 'errors:', JSON.stringify(svc.errors));
check('send after revoke fails E_AUTH', /^E_AUTH/.test(sendRes), sendRes);
check('one error per broker with revoked', svc.errors.filter((e) => e.code === 'E_AUTH' && e.details?.reason === 'revoked').length === 2, svc.errors.map((e) => [e.code, e.details]));
await sleep(1000);
check('listener never got "after"', !got.includes('after'), got);
la = await cli(a, 'keys', 'list'); lb = await cli(b, 'keys', 'list');
console.log(la.out, lb.out);
check('keys list after revoke same on both (no svc)', !/^svc /m.test(la.out) && !/^svc /m.test(lb.out), [la.out, lb.out]);
// fresh connection with the revoked key to each broker alone
for (const n of [a, b]) {
  const c = await mkClient([n], 'svc', k);
  check(`revoked key refused by ${n.id}`, c.connected?.code === 'E_AUTH' && c.connected?.details?.reason === 'revoked', c.connected);
  const s = await c.send('t/v1/x', 'via-' + n.id).then(() => 'ok', (e) => e.code);
  check(`send via ${n.id} with revoked key refused`, s !== 'ok', s);
  await c.disconnect();
}
// new key for svc via the slave only: accepted by both?
const k2 = keyPair();
const c2 = await mkClient([b], 'svc', k2);
check('new key registers on slave', c2.connected === null, c2.connected);
await sleep(700);
const c3 = await mkClient([a], 'svc', k2);
check('new key accepted by master too', c3.connected === null, c3.connected);
const s3 = await c3.send('t/v1/x', 'newkey').then(() => 'ok', (e) => e.code);
await sleep(500);
check('new key send delivered', s3 === 'ok' && got.includes('newkey'), [s3, got]);
// revoke on master now, client on both
const c4 = await mkClient([a, b], 'svc', k2);
const r2 = await cli(a, 'keys', 'revoke', 'svc');
console.log('revoke on master:', r2.out.trim());
const s4 = await c4.send('t/v1/x', 'after2').then(() => 'ok', (e) => e.code);
await sleep(800);
check('after master revoke: send refused and not delivered', s4 !== 'ok' && !got.includes('after2'), [s4, got]);
const q = await cli(a, 'list', '-q', 't/v1', '-m'); const qb = await cli(b, 'list', '-q', 't/v1', '-m');
console.log('queue a:', q.out, 'queue b:', qb.out);
// revoke with a peer down: names it
await kill9(a);
const r3 = await cli(b, 'keys', 'revoke', 'lis');
console.log('revoke with peer down:', r3.out.trim());
check('revoke with peer down names it not confirmed', /NOT confirmed by the peers a/.test(r3.out), r3.out);
await start(a); await sleep(2500);
la = await cli(a, 'keys', 'list'); lb = await cli(b, 'keys', 'list');
check('after restart keys list agree', la.out.replace(/\d+\s*$/gm, '') === lb.out.replace(/\d+\s*$/gm, ''), [la.out, lb.out]);
console.log(la.out, lb.out);
for (const c of [lis, svc, c2, c3, c4]) await c.disconnect().catch(() => {});
await cleanup();
process.exit(0);
