/* eslint-disable @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 28), kept as written and run */
// Item 4: refused keys are not redialed before authRetryMs; pending sends fail E_AUTH.
import { makeNodes, start, cli, mkClient, keyPair, sleep, check, waitFor, cleanup, proxy } from './harness.mjs';
const nodes = await makeNodes(['a', 'b']); const [a, b] = nodes;
await start(a); await start(b); await sleep(1500);
const pa = await proxy(a.port), pb = await proxy(b.port);
let dials = []; for (const [p, id] of [[pa, 'a'], [pb, 'b']]) p.server.on('connection', () => dials.push({ id, t: Date.now() }));
const hosts = [{ host: `127.0.0.1:${pa.port}@a` }, { host: `127.0.0.1:${pb.port}@b` }];
const k = keyPair();
const c = await mkClient(hosts, 'svc', k, { reconnect: { authRetryMs: 4000 } });
check('connected via proxies', c.connected === null, c.connected);
// pending sends: make master slow? just send many and revoke at once
const sends = []; for (let i = 0; i < 200; i++) sends.push(c.send('t/v1/x', i).then(() => 'ok', (e) => e.code));
const rv = cli(a, 'keys', 'revoke', 'svc');
const res = await Promise.all(sends); await rv;
const tally = res.reduce((m, r) => (m[r] = (m[r] ?? 0) + 1, m), {});
console.log('200 sends around revocation:', JSON.stringify(tally));
check('no E_ABORTED/E_NO_MASTER among pending sends', !tally.E_ABORTED && !tally.E_NO_MASTER, tally);
const tRev = Date.now(); dials = [];
await sleep(3000);
console.log('dials within 3 s after revoke:', dials.length, 'errors:', c.errors.length, JSON.stringify(c.errors.map((e) => e.details)));
check('no redial before authRetryMs (4 s)', dials.length === 0, dials.map((d) => [d.id, d.t - tRev]));
check('one error per broker', c.errors.filter((e) => e.code === 'E_AUTH').length === 2, c.errors.length);
const ns = await c.send('t/v1/x', 'new').then(() => 'ok', (e) => e.code + ':' + e.details?.reason);
check('new send fails at once E_AUTH', ns.startsWith('E_AUTH'), ns);
await sleep(3000);
console.log('dials by 6 s:', JSON.stringify(dials.map((d) => [d.id, d.t - tRev])), 'errors', c.errors.length);
check('redialed after authRetryMs', dials.length >= 2, dials.length);
await sleep(4500);
console.log('dials by 10.5 s:', JSON.stringify(dials.map((d) => [d.id, d.t - tRev])), 'errors now', c.errors.length);
check('errors not repeated each retry? (one per broker per refusal)', true, c.errors.length);
// new connect() redials at once?
await c.disconnect();
// other-key: rebuilt client of a registered name
const k0 = keyPair(); const own = await mkClient(hosts, 'shop', k0); await own.disconnect();
dials = [];
const rb = await mkClient(hosts, 'shop', keyPair(), { reconnect: { authRetryMs: 60000 } });
const t1 = Date.now();
console.log('rebuilt client connect:', JSON.stringify(rb.connected));
check('rebuilt client gets other-key', rb.connected?.details?.reason === 'other-key', rb.connected);
await sleep(5000);
check('other-key: exactly one dial per broker in 5 s', dials.length === 2, dials.map((d) => [d.id, d.t - t1]));
check('rebuilt: errors (events) one per broker', rb.errors.length <= 2, rb.errors.map((e) => e.details));
// revoke shop now on b; connect() again on the same client object: dials at once and registers
console.log((await cli(b, 'keys', 'revoke', 'shop')).out.trim());
dials = [];
const again = await rb.connect({ hosts, clientId: 'shop', privateKey: undefined }).then(() => 'ok', (e) => e.code + ':' + e.details?.reason + ':' + e.message);
console.log('connect() again', again, dials.length);
await rb.disconnect();
await cleanup();
process.exit(0);
