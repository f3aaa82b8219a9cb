/* eslint-disable @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 28), kept as written and run */
// Item 2 + 3: reservations belong to the client name; refusal details on each path.
import { makeNodes, start, cli, mkClient, keyPair, sleep, check, waitFor, cleanup, kill9, writeConfig } from './harness.mjs';
const rules = [
  { client: 'easilys-*', read: ['!invoice/*'] },
  { client: 'other-*', read: ['!invoice/*'] },
  { client: 'billing', write: ['invoice/*'] },
];
const [a, b] = await makeNodes(['a', 'b'], { rules, reservationHold: 86400 });
await start(a); await start(b); await sleep(1500);
const kE = keyPair(), kO = keyPair();
const billing = await mkClient([a, b], 'billing', keyPair());
function sub(mq, ch, got) {
  const errs = [];
  const h = mq.listen(ch, (err, msg, info) => { if (err) errs.push({ code: err.code, details: err.details, message: err.message }); else got.push(msg); });
  h.errs = errs;
  h.readyRes = h.ready.then(() => 'ok', (e) => e.code);
  return h;
}
const gotE1 = [], gotE2 = [], gotO = [];
const e1 = await mkClient([a, b], 'easilys-a', kE);
const h1 = sub(e1, 'invoice/v1/4711', gotE1);
check('instance 1 reserves', (await h1.readyRes) === 'ok');
const e2 = await mkClient([a, b], 'easilys-a', kE);
const h2 = sub(e2, 'invoice/v1/4711', gotE2);
check('instance 2 of same name accepted', (await h2.readyRes) === 'ok', h2.errs);
for (let i = 0; i < 6; i++) await billing.send('invoice/v1/4711', 'inv' + i);
await sleep(800);
check('round-robin within name', gotE1.length + gotE2.length === 6 && gotE1.length > 0 && gotE2.length > 0, [gotE1.length, gotE2.length]);
const o = await mkClient([a, b], 'other-x', kO);
const ho = sub(o, 'invoice/v1/4711', gotO);
const ro = await ho.readyRes;
await sleep(300);
console.log('other refused:', ro, JSON.stringify(ho.errs), 'error events', JSON.stringify(o.errors));
check('other name refused E_FORBIDDEN reserved in handler', ho.errs.some((e) => e.code === 'E_FORBIDDEN' && e.details?.reason === 'reserved' && e.details?.right === 'read' && e.details?.channel === 'invoice/v1/4711'), ho.errs);
check('other name: error event with details', o.errors.some((e) => e.code === 'E_FORBIDDEN' && e.details?.reason === 'reserved'), o.errors);
check('never told owner name', !JSON.stringify([ho.errs, o.errors]).includes('easilys'), '');
check('refusal logged at info with owner', /refused[^\n]*easilys-a|easilys-a[^\n]*refused/.test(a.log), '');
// star-under-reserve
const hs = sub(e1, 'invoice/v1/*', []);
console.log('star:', await hs.readyRes, JSON.stringify(hs.errs));
check('star under reserve refused with reason', hs.errs.some((e) => e.details?.reason === 'star-under-reserve'), hs.errs);
// write refusal
const sw = await e1.send('invoice/v1/4711', 'x').then(() => 'ok', (e) => ({ code: e.code, details: e.details }));
check('write no-rule details on send callback', sw.code === 'E_FORBIDDEN' && sw.details?.right === 'write' && sw.details?.reason === 'no-rule', sw);
// callback form
const cbErr = await new Promise((r) => e1.send('invoice/v1/4711', 'x', (err) => r(err && { code: err.code, details: err.details })));
check('write no-rule details via callback', cbErr?.details?.reason === 'no-rule', cbErr);
check('write refusal also as error event?', e1.errors.some((e) => e.code === 'E_FORBIDDEN' && e.details?.right === 'write'), e1.errors.map((e) => [e.code, e.details]));
// reservations list on both
const rla = await cli(a, 'reservations', 'list'), rlb = await cli(b, 'reservations', 'list');
console.log(rla.out, rlb.out);
check('reservations list on master and slave show owner', /invoice\/v1\/4711\s+easilys-a/.test(rla.out) && /invoice\/v1\/4711\s+easilys-a/.test(rlb.out));
// instance 1 restarts
await e1.disconnect();
const e1b = await mkClient([a, b], 'easilys-a', kE);
const h1b = sub(e1b, 'invoice/v1/4711', gotE1);
check('restarted instance accepted', (await h1b.readyRes) === 'ok', h1b.errs);
// rolling deploy of both: take both down, other tries meanwhile, then both up
await e2.disconnect(); await e1b.disconnect();
await sleep(300);
const o2 = await mkClient([a, b], 'other-x', kO);
const ho2 = sub(o2, 'invoice/v1/4711', gotO);
check('other name refused during the gap', (await ho2.readyRes) !== 'ok', [await ho2.readyRes, ho2.errs]);
const rl2 = await cli(a, 'reservations', 'list'); console.log(rl2.out);
const e3 = await mkClient([a, b], 'easilys-a', kE); const h3 = sub(e3, 'invoice/v1/4711', gotE1);
const e4 = await mkClient([a, b], 'easilys-a', kE); const h4 = sub(e4, 'invoice/v1/4711', gotE2);
check('both new instances accepted', (await h3.readyRes) === 'ok' && (await h4.readyRes) === 'ok');
// failover: kill -9 master, promote b
await e3.disconnect();
await kill9(a);
b.config.isMaster = true; writeConfig(b);
console.log('reload b', (await cli(b, 'reload')).out.trim());
await sleep(1500);
const rlb2 = await cli(b, 'reservations', 'list'); console.log(rlb2.out);
const o3 = await mkClient([b], 'other-x', kO);
const ho3 = sub(o3, 'invoice/v1/4711', gotO);
check('after failover other name refused', (await ho3.readyRes) !== 'ok', [await ho3.readyRes, ho3.errs]);
const n0 = gotE1.length + gotE2.length;
await billing.send('invoice/v1/4711', 'after-failover').catch((e) => console.log('send after failover', e.code));
await sleep(800);
check('after failover owner instance still receives', gotE1.length + gotE2.length > n0, [n0, gotE1.length + gotE2.length, gotO]);
check('other never received', gotO.length === 0, gotO);
// release via CLI
const rel = await cli(b, 'reservations', 'release', 'invoice/v1/4711');
console.log('release:', rel.code, rel.out.trim());
const o4 = await mkClient([b], 'other-x', kO);
const ho4 = sub(o4, 'invoice/v1/4711', gotO);
console.log('other after release:', await ho4.readyRes, JSON.stringify(ho4.errs), 'list:', (await cli(b, 'reservations', 'list')).out);
for (const c of [billing, e2, e4, o, o2, o3, o4]) await c.disconnect().catch(() => {});
await cleanup();
process.exit(0);
