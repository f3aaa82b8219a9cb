// Issue 27 item 10, the client side: a client refused for a budget keeps retrying until connectTimeout. Docs:
// client.md#connect ("A broker that refuses for a budget (E_LIMIT before welcome: its connection slots or its
// unauthenticated ones are full ...) is not an answer: the client redials it with back-off and jitter, and connect()
// waits for it until connectTimeout, then reports that refusal if no broker was connected; these refusals are not emitted
// on error while connect() waits"), configuration.md limits.maxConnections ("a socket opened while they are all taken is
// refused with E_LIMIT (1013) before hello"). One broker, limits.maxConnections 5, 5 clients connected.
// 1. a 6th client, connectTimeout 3 s, nobody leaves: connect() rejects E_LIMIT after about 3 s (not at once), 0 error events.
// 2. a 7th client, connectTimeout 8 s; one of the 5 disconnects 2 s later: connect() resolves, 0 error events.
import { makeNodes, start, mkClient, keyPair, check, finish } from './harness.mjs';
import { execFileSync } from 'node:child_process';

const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up());
const [n] = await makeNodes(['a'], { logLevel: 'warn', limits: { maxConnections: 5 } });
await start(n);
const five = []; for (let i = 0; i < 5; i++) five.push(await mkClient([n], `d11-${i}`, keyPair()));
const t0 = Date.now();
const sixth = await mkClient([n], 'd11-6', keyPair(), { connectTimeout: 3000 });
const ms6 = Date.now() - t0;
// client.md: "The failure also goes to your error listener when you have one": one E_LIMIT at the end is that failure
const before = sixth.errors.filter((e) => e.t < t0 + ms6 - 100);
check('d11.1 all slots taken: connect() waits until connectTimeout (3 s), then E_LIMIT; nothing on error before that failure',
  sixth.connected?.code === 'E_LIMIT' && ms6 >= 2800 && before.length === 0 && sixth.errors.length <= 1,
  { fiveConnected: five.filter((c) => !c.connected).length, result: sixth.connected, ms: ms6, errorEvents: sixth.errors.map((e) => `${e.code}@${e.t - t0}ms`) });
await sixth.disconnect();
const t1 = Date.now();
setTimeout(() => { five[0].disconnect(); }, 2000);
const seventh = await mkClient([n], 'd11-7', keyPair(), { connectTimeout: 8000 });
const ms7 = Date.now() - t1;
const sent = seventh.connected ? null : await seventh.send('jobs/v1/x', { i: 1 }).then(() => 'OK', (e) => e.code);
check('d11.2 a slot freed 2 s later: connect() resolves before connectTimeout (8 s), nothing on error', !seventh.connected && ms7 < 8000 && seventh.errors.length === 0,
  { result: seventh.connected ?? 'connected', ms: ms7, send: sent, errorEvents: seventh.errors.map((e) => e.code) });
for (const c of [...five.slice(1), seventh]) await c.disconnect();
console.log(up());
await finish(0);
