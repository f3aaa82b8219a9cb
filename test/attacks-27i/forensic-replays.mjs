/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// After a BROKEN run whose brokers' directories were kept (KEEP_DATA): copies a, b, c to DEST, starts each broker alone on
// its copy (no peers, no election, loopback ports: its history as it was on disk) and replays `rt/v1/*` (every id);
// writes DEST/replays.json ({ a: [[p, n], ...], ... }) and prints, per broker: records, twice (with their positions), the
// records the others have that it lacks (as ranges per producer, with where the others hold them), order breaks.
// node test/attacks-27i/forensic-replays.mjs <kept dir holding a b c> <dest dir>   (atk27g's forensic-nemesis-replays.mjs, adapted)
import { readFileSync, writeFileSync, cpSync, mkdirSync, rmSync } from 'node:fs';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { client } = await import(join(root, 'dist', 'index.js'));
const { generateKeyPairSync } = await import('node:crypto');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const [src, dir] = process.argv.slice(2);
rmSync(dir, { recursive: true, force: true }); mkdirSync(dir, { recursive: true });
const res = {}; const created = new Map(); // when each send was made (the client's clock: info.created)
const when = (keys) => { const t = keys.map((k) => created.get(k)).filter(Boolean); return t.length ? `made ${new Date(Math.min(...t)).toISOString().slice(11, 23)}-${new Date(Math.max(...t)).toISOString().slice(11, 23)}` : ''; };
let port = 29100 + Math.floor(Math.random() * 400) * 2;
for (const id of ['a', 'b', 'c']) {
  cpSync(join(src, id), join(dir, id), { recursive: true });
  const cfg = JSON.parse(readFileSync(`${dir}/${id}/config.json`));
  delete cfg.election; cfg.peers = []; cfg.isMaster = true; cfg.socketServer = { host: '127.0.0.1', port: ++port }; cfg.management = { host: '127.0.0.1', port: ++port };
  cfg.dataDirectory = `${dir}/${id}/data`; cfg.registeredClientsPath = `${dir}/${id}/clients`; cfg.keysDirectory = `${dir}/${id}/keys`; cfg.logLevel = 'info';
  writeFileSync(`${dir}/${id}/solo.json`, JSON.stringify(cfg));
  const p = spawn('node', [join(root, 'bin', 'whisker'), 'start', '-c', `${dir}/${id}/solo.json`, '--no-watch'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = ''; p.stdout.on('data', (d) => { log += d; }); p.stderr.on('data', (d) => { log += d; });
  for (let i = 0; i < 300; i++) { const ok = await new Promise((r) => { const s = net.connect(cfg.socketServer.port, '127.0.0.1'); s.once('connect', () => { s.destroy(); r(true); }); s.once('error', () => r(false)); }); if (ok) break; await sleep(100); }
  await sleep(1000);
  const { privateKey } = generateKeyPairSync('ed25519');
  const mq = client(); await mq.connect({ hosts: [`127.0.0.1:${cfg.socketServer.port}@${id}`], clientId: 'forensic-' + id + process.pid, privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) });
  const out = []; for await (const m of mq.replay('rt/v1/*', {})) { out.push([m.data.p, m.data.n]); created.set(m.data.p + ':' + m.data.n, m.info.created); }
  await mq.disconnect(); p.kill('SIGTERM'); await sleep(500);
  res[id] = out;
  console.log(id, 'started alone, log lines about its history:', log.split('\n').filter((l) => /history|made whole|written/.test(l)).map((l) => l.slice(0, 200)));
}
writeFileSync(join(dir, 'replays.json'), JSON.stringify(res));
const ranges = (keys) => { const byP = {}; for (const k of keys) { const [p, n] = k.split(':').map(Number); (byP[p] ??= []).push(n); } return Object.entries(byP).map(([p, ns]) => { ns.sort((x, y) => x - y); const rs = []; let s = ns[0], e = ns[0]; for (const n of ns.slice(1)) { if (n === e + 1) e = n; else { rs.push(s === e ? `${s}` : `${s}-${e}`); s = e = n; } } rs.push(s === e ? `${s}` : `${s}-${e}`); return `p${p}: ${ns.length} (${rs.slice(0, 6).join(', ')}${rs.length > 6 ? ', ...' : ''})`; }); };
for (const id of Object.keys(res)) {
  const seq = res[id].map(([p, n]) => p + ':' + n); const pos = new Map(); const twice = [];
  seq.forEach((k, i) => { if (pos.has(k)) twice.push([k, pos.get(k), i]); else pos.set(k, i); });
  let breaks = 0; let firstBreak = null; const mx = {}; res[id].forEach(([p, n], i) => { if (mx[p] !== undefined && n < mx[p]) { breaks++; firstBreak ??= `${p}:${n} at ${i} after ${p}:${mx[p]}`; } mx[p] = Math.max(mx[p] ?? -1, n); });
  console.log(`== ${id}: ${seq.length} records, ${twice.length} twice, ${breaks} order breaks (first: ${firstBreak})`);
  if (twice.length) console.log('  twice (key, first position, second):', JSON.stringify(twice.slice(0, 5)), when(twice.map((t) => t[0])), 'ranges', ranges(twice.map((t) => t[0])));
  for (const o of Object.keys(res)) if (o !== id) {
    const mine = new Set(seq); const theirs = res[o].map(([p, n]) => p + ':' + n); const lacks = theirs.filter((k) => !mine.has(k));
    if (lacks.length) { const at = theirs.map((k, i) => [k, i]).filter(([k]) => !mine.has(k)).map(([, i]) => i); console.log(`  lacks ${lacks.length} that ${o} has, at ${o}'s positions ${Math.min(...at)}-${Math.max(...at)} of ${theirs.length}, ${when(lacks)}:`, ranges(lacks)); }
  }
}
