// Issue 27 item 10: 500 clients of one name connecting at once from one address (127.0.0.1) all connect (the
// per-address share bites only when the total budget is full; a budget refusal is retried until connectTimeout).
// Then the same with 2,000 slowloris sockets kept open from 127.0.0.2 (silent TCP and half-sent upgrades); a single
// real client's connect time meanwhile. Defaults: maxUnauthenticatedConnections 1000, perAddress 100, upgradeTimeout 5.
import { makeNodes, start, mkClient, keyPair, sleep, check, finish, client } from './harness.mjs';
import net from 'node:net';
const CROWD = Number(process.env.CROWD ?? 500), LORIS = Number(process.env.LORIS ?? 2000);
const nodes = await makeNodes(['a'], { logLevel: 'warn' });
await start(nodes[0]);
const key = keyPair();
const first = await mkClient(nodes, 'crowd', key); await first.disconnect(); // register the name once
async function crowd(label) {
  const t0 = Date.now();
  const cs = Array.from({ length: CROWD }, () => client());
  const rs = await Promise.all(cs.map((c) => { c.on('error', () => {}); return c.connect({ hosts: [nodes[0].host], clientId: 'crowd', privateKey: key.privateKey, connectTimeout: 10000 }).then(() => ({ ok: true, ms: Date.now() - t0 }), (e) => ({ code: e.code, msg: e.message, ms: Date.now() - t0 })); }));
  const fails = rs.filter((r) => !r.ok); const codes = {}; for (const f of fails) codes[f.code + ': ' + (f.msg ?? '').slice(0, 50)] = (codes[f.code + ': ' + (f.msg ?? '').slice(0, 50)] ?? 0) + 1;
  const okMs = rs.filter((r) => r.ok).map((r) => r.ms).sort((a, b) => a - b);
  await Promise.all(cs.map((c) => c.disconnect().catch(() => {})));
  return { label, ok: okMs.length, failed: fails.length, codes, p50ms: okMs[Math.floor(okMs.length / 2)], maxMs: okMs.at(-1) };
}
const a = await crowd('alone');
check(`10a ${CROWD} clients at once from one address: all connect`, a.failed === 0, a);
// slowloris from 127.0.0.2
let loris = true, opened = 0, closedByBroker = 0; const socks = new Set();
function openOne(i) {
  if (!loris) return;
  const s = net.connect({ port: nodes[0].port, host: '127.0.0.1', localAddress: '127.0.0.2' });
  socks.add(s); opened++;
  s.on('connect', () => { if (i % 2) s.write('GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n'); });
  s.on('error', () => {});
  s.on('close', () => { socks.delete(s); closedByBroker++; setTimeout(() => openOne(i), 20); });
}
for (let i = 0; i < LORIS; i++) { openOne(i); if (i % 200 === 0) await sleep(10); }
await sleep(1500);
const t1 = Date.now(); const solo = client(); solo.on('error', () => {});
const soloR = await solo.connect({ hosts: [nodes[0].host], clientId: 'solo', privateKey: keyPair().privateKey, connectTimeout: 10000 }).then(() => 'OK', (e) => e.code);
const soloMs = Date.now() - t1; await solo.disconnect();
const b = await crowd('with slowloris');
check(`10b ${CROWD} clients from one address while ${LORIS} slowloris sockets from another: all connect`, b.failed === 0, { ...b, lorisOpen: socks.size, lorisClosedByBroker: closedByBroker });
check('10c a real client connects quickly (< 3 s) during the slowloris', soloR === 'OK' && soloMs < 3000, { soloR, soloMs });
loris = false; for (const s of socks) s.destroy();
await finish(0);
