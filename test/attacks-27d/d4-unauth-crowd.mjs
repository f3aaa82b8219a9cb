// Issue 27 item 10 from new angles. Docs: configuration.md (limits.maxUnauthenticatedConnections: "Below it every
// newcomer is let in, whatever its address. At it, one more closes a stranger ...: the oldest of the address holding the
// most past maxUnauthenticatedPerAddress"; maxUnauthenticatedPerAddress: "Below the total it does not bite: 500 clients
// behind one NAT address reconnecting at once after a broker restart all handshake. A client refused for a budget
// (E_LIMIT before welcome) redials with back-off and jitter, and its connect() waits until connectTimeout"), client.md#connect.
// 1. CROWD (500) clients from 127.0.0.1 connect() at once to one broker (connectTimeout 20 s): all resolve.
// 2. The same crowd while SILENT (1,500) raw TCP sockets from 127.0.0.2 already hold strangers' slots and the total
//    budget is lowered to 1,000 by default: 1,500 + 500 > 1,000, so the budget is full; the silent address holds the most
//    past its share: all 500 real clients connect within connectTimeout.
// 3. A broker restart (kill -9) under the 500 connected clients: they all reconnect (isConnected) within 20 s.
import { makeNodes, start, kill9, mkClient, keyPair, sleep, check, finish, waitFor, metrics } from './harness.mjs';
import { execFileSync } from 'node:child_process';
import net from 'node:net';

const CROWD = Number(process.env.CROWD ?? 500), SILENT = Number(process.env.SILENT ?? 1500);
const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up(), { CROWD, SILENT });
const [n] = await makeNodes(['a'], { logLevel: 'warn' });
await start(n);
const keys = Array.from({ length: CROWD }, () => keyPair());
async function crowd(tag) {
  const t0 = Date.now();
  const cs = await Promise.all(keys.map((k, i) => mkClient([n], `d4-${i}`, k, { connectTimeout: 20000 }).then((c) => { c.ms = Date.now() - t0; return c; })));
  const fails = {}; for (const c of cs) if (c.connected) { const k = c.connected.code + ' ' + (c.connected.message ?? '').slice(0, 50); fails[k] = (fails[k] ?? 0) + 1; }
  const ms = cs.filter((c) => !c.connected).map((c) => c.ms).sort((x, y) => x - y);
  const limitEvents = cs.reduce((s, c) => s + c.errors.filter((e) => e.code === 'E_LIMIT').length, 0);
  return { cs, ok: cs.length - Object.values(fails).reduce((x, y) => x + y, 0), fails, p50: ms[Math.floor(ms.length / 2)], max: ms.at(-1), limitEventsOnError: limitEvents, tag };
}
const r1 = await crowd('alone');
check(`d4.1 ${CROWD} clients from one address connect() at once: all resolve`, r1.ok === CROWD, { ok: r1.ok, fails: r1.fails, p50ms: r1.p50, maxMs: r1.max, E_LIMIT_on_error: r1.limitEventsOnError });
await Promise.all(r1.cs.map((c) => c.disconnect()));
await sleep(1000);
// 2. silent sockets from 127.0.0.2
const silent = [];
for (let i = 0; i < SILENT; i++) {
  const s = net.connect({ port: n.port, host: '127.0.0.1', localAddress: '127.0.0.2' }); s.on('error', () => {}); silent.push(s);
  if (i % 100 === 99) await sleep(20);
}
await sleep(1000);
const stillOpen = () => silent.filter((s) => !s.destroyed && s.readyState === 'open').length;
const open0 = stillOpen();
const r2 = await crowd('with-silent');
const open1 = stillOpen();
check(`d4.2 ${CROWD} clients from 127.0.0.1 while ${SILENT} silent sockets from 127.0.0.2 fill the budget: all resolve`, r2.ok === CROWD,
  { ok: r2.ok, fails: r2.fails, p50ms: r2.p50, maxMs: r2.max, silentOpenBefore: open0, silentOpenAfter: open1, E_LIMIT_on_error: r2.limitEventsOnError });
for (const s of silent) s.destroy();
// 3. broker restart under the connected crowd
const tKill = Date.now(); await kill9(n); await start(n); const tUp = Date.now();
const allBack = await waitFor(() => r2.cs.every((c) => c.isConnected()), 30000, 200);
const back = r2.cs.filter((c) => c.isConnected()).length;
const m = await metrics(n);
const lim = r2.cs.reduce((s, c) => s + c.errors.filter((e) => e.t > tKill && e.code === 'E_LIMIT').length, 0);
check(`d4.3 the broker killed -9 and restarted under ${CROWD} connected clients of one address: all connected again within 30 s`, !!allBack,
  { back, msAfterRestart: Date.now() - tUp, E_LIMIT_on_error_after_restart: lim, rssMiB: m && Math.round((m.process_resident_memory_bytes ?? 0) / 1048576) });
await Promise.all(r2.cs.map((c) => c.disconnect()));
console.log(up());
await finish(0);
