/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// Scenario 4, connection budget: one broker with the default limits (maxUnauthenticatedConnections 1,000,
// maxUnauthenticatedPerAddress 100). (1) K clients (default 500), each its own name and key, call connect() at once from
// 127.0.0.1 (connectTimeout 10 s): all must connect. ROUNDS times (default 2), names new each round, then the same names
// again (registered keys). (2) 2,000 silent TCP sockets from 127.0.0.2 (no upgrade), then one real client from 127.0.0.1:
// it connects, quickly. (3) While 1,500 silent sockets from 127.0.0.2 are held (past the total budget: every stranger of
// 127.0.0.2 goes first), K clients at once from 127.0.0.1 (reported: the docs promise the per-address share protects
// the others once the total is full, and a client refused for a budget retries until connectTimeout).
// Promises: configuration.md limits.maxUnauthenticatedPerAddress ("500 clients behind one NAT address reconnecting at
// once after a broker restart all handshake"), client.md#connect (a budget refusal is retried until connectTimeout).
import net from 'node:net';
import { makeNodes, start, sleep, finish, check, mkClient, keyPair, up } from './common.mjs';
const K = Number(process.env.K ?? 500); const ROUNDS = Number(process.env.ROUNDS ?? 2);
console.log('start', new Date().toISOString(), up(), { K, ROUNDS });
const [A] = await makeNodes(['a'], { logLevel: 'info', peers: [] });
A.config.peers = []; (await import('./common.mjs')).writeConfig(A);
await start(A);
const keys = Array.from({ length: K }, () => keyPair());
async function crowd(tag) {
  const t0 = Date.now();
  const cs = await Promise.all(keys.map((k, i) => mkClient([A], `${tag}-${i}`, k, { connectTimeout: 10000 })));
  const ms = Date.now() - t0;
  const failed = cs.filter((c) => c.connected); const codes = {}; for (const c of failed) codes[`${c.connected.code} ${c.connected.message?.slice(0, 60)}`] = (codes[`${c.connected.code} ${c.connected.message?.slice(0, 60)}`] ?? 0) + 1;
  await Promise.all(cs.map((c) => c.disconnect().catch(() => {})));
  return { failed: failed.length, codes, ms };
}
const res = [];
for (let r = 0; r < ROUNDS; r++) { res.push({ round: `new names ${r}`, ...(await crowd(`n${r}-${process.pid}`)) }); await sleep(1000); res.push({ round: `same names ${r}`, ...(await crowd(`n${r}-${process.pid}`)) }); await sleep(1000); }
check(`g4d ${K} clients connecting at once from one address (${ROUNDS * 2} rounds): every connect() succeeds`, res.every((r) => r.failed === 0), { res });
async function silent(k) {
  const socks = []; for (let i = 0; i < k; i++) { const s = net.connect({ host: '127.0.0.1', port: A.port, localAddress: '127.0.0.2' }); s.on('error', () => {}); socks.push(s); if (i % 200 === 199) await sleep(20); }
  await sleep(1000); return socks;
}
const s1 = await silent(2000);
const open1 = s1.filter((s) => !s.destroyed && s.readyState === 'open').length;
const t1 = Date.now(); const one = await mkClient([A], `one-${process.pid}`, keyPair(), { connectTimeout: 10000 }); const oneMs = Date.now() - t1;
check(`g4d slowloris: 2,000 silent sockets from 127.0.0.2, a real client from 127.0.0.1 still connects quickly`, !one.connected && oneMs < 3000, { silentStillOpen: open1, oneConnected: !one.connected, oneMs, err: one.connected });
await one.disconnect(); for (const s of s1) s.destroy(); await sleep(1500);
const s2 = await silent(1500);
const c3 = await crowd(`m-${process.pid}`);
for (const s of s2) s.destroy();
check(`g4d ${K} clients at once from 127.0.0.1 while 1,500 silent sockets from 127.0.0.2 fill the total budget: every connect() succeeds within connectTimeout`, c3.failed === 0, { ...c3, load: up() });
await finish(0);
