/* eslint-disable @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 28), kept as written and run */
// Item 1: a revoked client spraying sends: nothing it sends after a broker applied the revocation is stored or delivered.
import { makeNodes, start, cli, mkClient, keyPair, sleep, check, cleanup, proxy } from './harness.mjs';
import { unlinkSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
const nodes = await makeNodes(['a', 'b']); const [a, b] = nodes;
await start(a); await start(b); await sleep(1500);
const got = [];
const lis = await mkClient(nodes, 'lis', keyPair());
await lis.listen('t/v1/x', (e, m) => { if (!e) got.push({ m, t: Date.now() }); }).ready;
const svc = await mkClient(nodes, 'svc', keyPair(), { maxBufferedMessages: 100000 });
let i = 0, stopped = false;
const results = [];
const pump = (async () => { while (!stopped) { for (let k = 0; k < 50; k++) { const n = i++; svc.send('t/v1/x', { n }).then(() => results.push({ n, r: 'ok' }), (e) => results.push({ n, r: e.code })); } await sleep(2); } })();
await sleep(1000);
const r = await cli(b, 'keys', 'revoke', 'svc');
const tDone = Date.now();
await sleep(1500); stopped = true; await pump; await sleep(1500);
const okN = new Set(results.filter((x) => x.r === 'ok').map((x) => x.n));
const maxOk = Math.max(...okN);
const gotN = got.map((g) => g.m.n);
const notOkButDelivered = gotN.filter((n) => !okN.has(n));
const tally = results.reduce((m, x) => (m[x.r] = (m[x.r] ?? 0) + 1, m), {});
console.log('sent', i, 'results', JSON.stringify(tally), 'delivered', gotN.length, 'max ok', maxOk, 'max delivered', Math.max(...gotN), 'delivered but not ok:', notOkButDelivered.length, notOkButDelivered.slice(0, 10));
const lastDelivered = got[got.length - 1]?.t;
console.log('last delivery at', lastDelivered - tDone, 'ms relative to revoke command done');
check('nothing delivered after the revoke command returned', lastDelivered <= tDone + 50, lastDelivered - tDone);
// .pub removed by hand on the slave, then reload: spreads
const k2 = keyPair();
const hand = await mkClient(nodes, 'hand', k2);
unlinkSync(join(b.config.registeredClientsPath, 'hand.pub'));
console.log('reload b', (await cli(b, 'reload')).out.trim());
await sleep(1000);
console.log('hand errors', JSON.stringify(hand.errors.map((e) => e.details)));
check('.pub removed by hand on slave + reload: closed on both with revoked', hand.errors.filter((e) => e.details?.reason === 'revoked').length === 2, hand.errors.map((e) => e.details));
const la = await cli(a, 'keys', 'list');
check('.pub removal spread to master (keys list)', !/^hand\s/m.test(la.out), la.out);
await cleanup(); process.exit(0);
