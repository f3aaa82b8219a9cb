/* eslint-disable no-undef, no-empty, @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27): Node 20 global fetch, best-effort cleanup, figures kept for reading */
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
const PROCS = Number(process.env.PROCS ?? 5);
const { spawn: spawnC } = await import('node:child_process');
async function crowd(label) {
  // PROCS child processes of CROWD/PROCS clients each, all from 127.0.0.1 (app instances behind one address)
  const outs = await Promise.all(Array.from({ length: PROCS }, () => new Promise((resolve) => {
    const p = spawnC('node', [new URL('./crowd-child.mjs', import.meta.url).pathname, nodes[0].host, String(CROWD / PROCS), Buffer.from(key.privateKey).toString('base64')], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = ''; p.stdout.on('data', (d) => { out += d; }); p.on('exit', () => { try { resolve(JSON.parse(out.trim().split('\n').at(-1))); } catch { resolve([]); } });
  })));
  const rs = outs.flat();
  const fails = rs.filter((r) => !r.ok); const codes = {}; for (const f of fails) codes[f.code] = (codes[f.code] ?? 0) + 1;
  const okMs = rs.filter((r) => r.ok).map((r) => r.ms).sort((a, b) => a - b);
  return { label, procs: PROCS, ok: okMs.length, failed: fails.length, codes, p50ms: okMs[Math.floor(okMs.length / 2)], maxMs: okMs.at(-1) };
}
const a = await crowd('alone');
check(`10a ${CROWD} clients at once from one address: all connect`, a.failed === 0, a);
// slowloris from 127.0.0.2, in a child process of its own (so this process's CPU is the crowd's alone); it prints its counts
const lorisSrc = `const net=require('net');let open=0,closed=0;const socks=new Set();function o(i){const s=net.connect({port:${nodes[0].port},host:'127.0.0.1',localAddress:'127.0.0.2'});socks.add(s);
s.on('connect',()=>{if(i%2)s.write('GET / HTTP/1.1\\r\\nHost: x\\r\\nUpgrade: websocket\\r\\n')});s.on('error',()=>{});s.on('close',()=>{socks.delete(s);closed++;setTimeout(()=>o(i),20)})}
for(let i=0;i<${LORIS};i++)o(i);setInterval(()=>console.log(JSON.stringify({open:socks.size,closed})),1000);`;
const { spawn } = await import('node:child_process');
const lorisProc = spawn('node', ['-e', lorisSrc], { stdio: ['ignore', 'pipe', 'inherit'] });
let lorisLast = {}; lorisProc.stdout.on('data', (d) => { const l = d.toString().trim().split('\n').at(-1); try { lorisLast = JSON.parse(l); } catch {} });
process.on('exit', () => lorisProc.kill('SIGKILL'));
const socks = { get size() { return lorisLast.open; } }; let closedByBroker = 0;
await sleep(1500);
const t1 = Date.now(); const solo = client(); solo.on('error', () => {});
const soloR = await solo.connect({ hosts: [nodes[0].host], clientId: 'solo', privateKey: keyPair().privateKey, connectTimeout: 10000 }).then(() => 'OK', (e) => e.code);
const soloMs = Date.now() - t1; await solo.disconnect();
const b = await crowd('with slowloris');
check(`10b ${CROWD} clients from one address while ${LORIS} slowloris sockets from another: all connect`, b.failed === 0, { ...b, lorisOpen: socks.size, lorisClosedByBroker: lorisLast.closed });
check('10c a real client connects quickly (< 3 s) during the slowloris', soloR === 'OK' && soloMs < 3000, { soloR, soloMs });
lorisProc.kill('SIGKILL');
await finish(0);
