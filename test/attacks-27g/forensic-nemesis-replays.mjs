/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// After a failed nemesis run (its directory kept): copy a, b, c from it, then start each broker alone (no peers, no
// election, loopback ports) on its copy and replay feed/v1/1, compared with recorded.json (the answered sends).
// node test/attacks-27g/forensic-nemesis-replays.mjs <copy dir holding a b c> <recorded.json>
// start each copied nemesis broker alone (no peers, no election) and replay feed/v1/1; compare with recorded.json
import { readFileSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { client } = await import(join(root, 'dist', 'index.js'));
const { generateKeyPairSync } = await import('node:crypto');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const dir = process.argv[2]; const rec = JSON.parse(readFileSync(process.argv[3]));
const res = {};
let port = 29100 + Math.floor(Math.random() * 400) * 2;
for (const id of ['a', 'b', 'c']) {
  const cfgP = `${dir}/${id}/config.json`; const cfg = JSON.parse(readFileSync(cfgP));
  delete cfg.election; cfg.peers = []; cfg.isMaster = true; cfg.socketServer = { host: '127.0.0.1', port: ++port }; cfg.management = { host: '127.0.0.1', port: ++port };
  cfg.dataDirectory = `${dir}/${id}/data`; cfg.registeredClientsPath = `${dir}/${id}/clients`; cfg.keysDirectory = `${dir}/${id}/keys`;
  writeFileSync(`${dir}/${id}/solo.json`, JSON.stringify(cfg));
  const p = spawn('node', [join(root, 'bin', 'whisker'), 'start', '-c', `${dir}/${id}/solo.json`, '--no-watch'], { stdio: 'ignore' });
  for (let i = 0; i < 300; i++) { const ok = await new Promise((r) => { const s = net.connect(cfg.socketServer.port, '127.0.0.1'); s.once('connect', () => { s.destroy(); r(true); }); s.once('error', () => r(false)); }); if (ok) break; await sleep(100); }
  await sleep(1000);
  const { privateKey } = generateKeyPairSync('ed25519');
  const mq = client(); await mq.connect({ hosts: [`127.0.0.1:${cfg.socketServer.port}@${id}`], clientId: 'forensic-' + id + process.pid, privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) });
  const out = []; for await (const m of mq.replay('feed/v1/1', {})) out.push([m.data.p, m.data.s]);
  await mq.disconnect(); p.kill('SIGTERM'); await sleep(500);
  res[id] = out;
}
// answered OK feed sends
const want = new Set(); rec.outcome.forEach((o, p) => { for (const [s, r] of o['feed/v1/1'] ?? []) if (r === 'ok') want.add(p + ':' + s); });
const fin = rec.final.map((x) => x.join(':')); console.log('answered ok', want.size, 'final', fin.length);
for (const id of Object.keys(res)) {
  const seq = res[id].map(([p, s]) => p + ':' + s); const set = new Set(seq);
  const missing = [...want].filter((k) => !set.has(k));
  let breaks = 0; const mx = {}; for (const [p, s] of res[id]) { if (mx[p] !== undefined && s < mx[p]) breaks++; mx[p] = Math.max(mx[p] ?? -1, s); }
  const sameAsFinal = seq.length === fin.length && seq.every((k, i) => k === fin[i]);
  console.log(id, { records: seq.length, missingOfAnswered: missing.length, missingEx: missing.slice(0, 5), outOfOrder: breaks, sameAsFinalReplay: sameAsFinal });
}
for (const id of Object.keys(res)) { const seen = new Map(); for (const [p, s] of res[id]) seen.set(p + ':' + s, (seen.get(p + ':' + s) ?? 0) + 1); const twice = [...seen].filter(([, k]) => k > 1); const notOk = [...seen.keys()].filter((k) => !want.has(k)); console.log(id, 'twice', twice.length, twice.slice(0, 4), 'notAnsweredOK', notOk.length, notOk.slice(0, 4)); }
const a = new Set(res.a.map(([p, s]) => p + ':' + s)); const miss = [...want].filter((k) => !a.has(k)).map((k) => k.split(':').map(Number)); const byP = {}; for (const [p, s] of miss) (byP[p] ??= []).push(s); for (const p in byP) console.log('a lacks p' + p, byP[p].length, 'from', Math.min(...byP[p]), 'to', Math.max(...byP[p]));
