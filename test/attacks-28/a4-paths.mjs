/* eslint-disable @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 28), kept as written and run */
// Item 3: refusal details on every path.
import { makeNodes, start, cli, mkClient, keyPair, sleep, check, waitFor, cleanup, kill9, writeConfig } from './harness.mjs';
const rules = [
  { client: 'easilys-*', read: ['!invoice/*', 'plain/*'] },
  { client: 'other-*', read: ['!invoice/*', 'plain/*'], write: ['plain/*'] },
];
const [a, b] = await makeNodes(['a', 'b'], { rules });
try { await start(a); } catch (e) { console.log('start failed, retry without channels', e.message.slice(0, 300)); delete a.config.channels; delete b.config.channels; writeConfig(a); writeConfig(b); await start(a); }
await start(b); await sleep(1500);
const e = await mkClient([a, b], 'easilys-a', keyPair());
await e.listen('invoice/v1/r1', () => {}).ready;
await e.listen('invoice/v1/r2', () => {}).ready;
const o = await mkClient([a, b], 'other-x', keyPair());
// 1. unawaited send forbidden
o.send('invoice/v1/r1', 'x');
await sleep(500);
const ev1 = o.errors.find((x) => x.code === 'E_FORBIDDEN');
check('unawaited forbidden send -> error event with details', ev1?.details?.right === 'write' && ev1?.details?.reason === 'no-rule', o.errors);
o.errors.length = 0;
// 2. stream form, multi-id partial refusal
const st = o.listen({ endpoint: 'invoice', version: 'v1', ids: ['free1', 'r1'] });
await sleep(800);
console.log('stream partial', JSON.stringify(o.errors));
check('stream partial refusal -> error event with details reserved', o.errors.some((x) => x.code === 'E_FORBIDDEN' && x.details?.reason === 'reserved' && x.details?.channel === 'invoice/v1/r1'), o.errors);
o.errors.length = 0;
// 3. addId via handler, unawaited / awaited
const herr = [];
const h = o.listen({ endpoint: 'invoice', version: 'v1', ids: [] }, (err) => { if (err) herr.push({ code: err.code, details: err.details }); });
const ar = await h.addId('r2').then(() => 'ok', (x) => ({ code: x.code, details: x.details, message: x.message }));
console.log('addId awaited', JSON.stringify(ar), 'handler', JSON.stringify(herr));
check('addId reserved: promise error has details', ar?.details?.reason === 'reserved', ar);
h.addId('r1');
await sleep(500);
console.log('addId unawaited: errors', JSON.stringify(o.errors), 'handler', JSON.stringify(herr));
check('addId unawaited: details on error event or handler', o.errors.concat(herr).some((x) => x.details?.reason === 'reserved' && x.details?.channel === 'invoice/v1/r1'), [o.errors, herr]);
o.errors.length = 0;
// 4. consume on reserved id
const cerr = [];
const hc = o.consume('invoice/v1/r1', (err) => { if (err) cerr.push({ code: err.code, details: err.details }); });
await hc.ready.catch(() => {});
check('consume reserved -> handler details', cerr.some((x) => x.details?.reason === 'reserved'), cerr);
// 5. replay on reserved id
let rp;
try { rp = await new Promise((res) => { const r = o.replay('invoice/v1/r1', { since: 0 }, (err, m) => { if (err) res({ code: err.code, details: err.details }); }); r.done.then(() => res('done-ok'), (x) => res({ code: x.code, details: x.details })); }); } catch (x) { rp = { thrown: x.code, details: x.details }; }
console.log('replay reserved', JSON.stringify(rp));
check('replay reserved -> details reserved', rp?.details?.reason === 'reserved', rp);
// 6. a client connected only to the slave
const os = await mkClient([b], 'other-s', keyPair());
const serr = [];
const hs = os.listen('invoice/v1/r1', (err) => { if (err) serr.push({ code: err.code, details: err.details }); });
const rs = await Promise.race([hs.ready.then(() => "ok", (x) => x.code), new Promise((r) => setTimeout(() => r("ready-pending-5s"), 5000))]);
console.log('slave-only subscribe', rs, JSON.stringify(serr));
check('slave-only other name refused with reserved details', serr.some((x) => x.details?.reason === 'reserved'), [rs, serr]);
// 7. a reload that removes the right: revoked frame
const herr2 = [];
const e2 = await mkClient([a, b], 'easilys-b', keyPair());
const hp = e2.listen('plain/v1/p', (err) => { if (err) herr2.push({ code: err.code, details: err.details }); });
await hp.ready;
for (const n of [a, b]) { n.config.rules = [{ client: 'easilys-*', read: ['!invoice/*'] }, { client: 'other-*', read: ['!invoice/*', 'plain/*'], write: ['plain/*'] }]; writeConfig(n); await cli(n, 'reload'); }
await sleep(800);
console.log('reload revoked', JSON.stringify(herr2), 'events', JSON.stringify(e2.errors));
check('right lost at reload -> handler details no-rule', herr2.some((x) => x.code === 'E_FORBIDDEN' && x.details?.reason === 'no-rule' && x.details?.channel === 'plain/v1/p'), herr2);
check('no message anywhere names easilys-a to other', !JSON.stringify([o.errors, herr, cerr, rp, serr]).includes('easilys'));
// log rate limit: 20 refusals same name+channel -> 1 log line
const before = (a.log.match(/"msg":"refused"[^\n]*other-x[^\n]*invoice\/v1\/r2|other-x[^\n]*"msg":"refused"/g) || []).length;
for (let i = 0; i < 20; i++) await o.listen('invoice/v1/r2', () => {}).ready.catch(() => {});
await sleep(300);
const lines = a.log.split('\n').filter((l) => l.includes('refused') && l.includes('other-x') && l.includes('invoice/v1/r2'));
console.log('refusal log lines for other-x r2:', lines.length, lines[0]);
check('refusals logged at most once a minute per name+channel', lines.length <= 1, lines.length);
for (const c of [e, o, os, e2]) await c.disconnect().catch(() => {});
await cleanup();
process.exit(0);
