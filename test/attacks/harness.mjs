/* eslint-disable no-undef, no-empty -- outsider attack harness (issues 27, 28): Node 20 global fetch, best-effort kills */
// Outsider harness for the attacks of test/attacks-NN/ (issues 27, 28): real broker processes, real clients from dist/.
// Each attacks-NN/harness.mjs re-exports this one; the temp dir is named after the script's folder (atkNN-).
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import net from 'node:net';
import { generateKeyPairSync } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const { client } = await import(join(root, 'dist', 'index.js'));
const pexec = promisify(execFile);
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let nextPort = 23000 + Math.floor(Math.random() * 3000) * 5;
export async function port() {
  for (;;) {
    const p = nextPort++;
    const ok = await new Promise((r) => { const s = net.createServer(); s.once('error', () => r(false)); s.listen(p, '127.0.0.1', () => s.close(() => r(true))); });
    if (ok) return p;
  }
}

export function keyPair() {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }), publicKey: publicKey.export({ type: 'spki', format: 'pem' }) };
}

export const base = mkdtempSync(join(tmpdir(), `atk${(process.argv[1] ?? '').match(/attacks-(\d+)/)?.[1] ?? ''}-`));
const procs = [];

export async function makeNodes(ids, extra = {}) {
  const nodes = [];
  for (const id of ids) nodes.push({ id, port: await port(), mport: await port(), dir: join(base, id) });
  for (const n of nodes) {
    mkdirSync(n.dir, { recursive: true });
    n.cfgPath = join(n.dir, 'config.json');
    n.config = {
      serviceId: n.id, isMaster: n === nodes[0], dataDirectory: join(n.dir, 'data'),
      registeredClientsPath: join(n.dir, 'clients'), keysDirectory: join(n.dir, 'keys'), keysName: 'broker',
      socketServer: { host: '127.0.0.1', port: n.port }, management: { host: '127.0.0.1', port: n.mport },
      peers: nodes.filter((m) => m !== n).map((m) => `127.0.0.1:${m.port}@${m.id}`),
      logLevel: 'debug', ...extra,
    };
    n.host = `127.0.0.1:${n.port}@${n.id}`;
    writeConfig(n);
  }
  made.push(...nodes);
  return nodes;
}
export function writeConfig(n) { writeFileSync(n.cfgPath, JSON.stringify(n.config, null, 2)); }

export async function start(n) {
  const p = spawn('node', [...(n.nodeArgs ?? []), join(root, 'bin', 'whisker'), 'start', '-c', n.cfgPath, '--no-watch'], { stdio: ['ignore', 'pipe', 'pipe'] });
  n.proc = p; n.log = n.log ?? ''; procs.push(p);
  p.stdout.on('data', (d) => { n.log += d; }); p.stderr.on('data', (d) => { n.log += d; });
  const t0 = Date.now();
  while (Date.now() - t0 < 120000) {
    const ok = await new Promise((r) => { const s = net.connect(n.port, '127.0.0.1'); s.once('connect', () => { s.destroy(); r(true); }); s.once('error', () => r(false)); });
    if (ok) return n;
    if (p.exitCode !== null) throw new Error(`${n.id} exited ${p.exitCode}: ${n.log}`);
    await sleep(100);
  }
  throw new Error(`${n.id} did not start: ${n.log}`);
}
export async function kill9(n) { if (n.proc && n.proc.exitCode === null) { const done = new Promise((r) => n.proc.once('exit', r)); n.proc.kill('SIGKILL'); await done; } }
export async function stop(n) { if (n.proc && n.proc.exitCode === null) { const done = new Promise((r) => n.proc.once('exit', r)); n.proc.kill('SIGTERM'); await done; } }
export async function cli(n, ...args) {
  try { const r = await pexec('node', [join(root, 'bin', 'whisker'), ...args, '-c', n.cfgPath], { timeout: 20000 }); return { code: 0, out: r.stdout + r.stderr }; }
  catch (e) { return { code: e.code, out: (e.stdout ?? '') + (e.stderr ?? '') }; }
}
export async function health(n) { try { const r = await fetch(`http://127.0.0.1:${n.mport}/health`); return { status: r.status, body: await r.json() }; } catch (e) { return { status: 0, body: String(e) }; } }

export async function mkClient(nodes, clientId, key, opts = {}) {
  const mq = client();
  mq.errors = [];
  mq.on('error', (e) => mq.errors.push({ code: e.code, message: e.message, details: e.details, t: Date.now() }));
  const p = mq.connect({ hosts: nodes.map((n) => n.host), clientId, privateKey: key.privateKey, connectTimeout: 4000, sendTimeout: 4000, ...opts });
  p.catch(() => {});
  mq.connected = await p.then(() => null, (e) => ({ code: e.code, message: e.message, details: e.details }));
  return mq;
}
export async function waitFor(fn, ms = 10000, step = 100) { const t0 = Date.now(); for (;;) { const v = await fn(); if (v) return v; if (Date.now() - t0 > ms) return v; await sleep(step); } }

export async function cleanup() { for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL'); }
process.on('exit', () => { for (const p of procs) if (p.exitCode === null) try { p.kill('SIGKILL'); } catch {} });

export const findings = [];
export function check(name, ok, detail) { const line = `${ok ? 'HELD  ' : 'BROKEN'} ${name}${detail ? ' :: ' + (typeof detail === 'string' ? detail : JSON.stringify(detail)) : ''}`; console.log(line); findings.push(line); }

// A TCP proxy that can be cut (all sockets destroyed, new ones refused) and healed.
export async function proxy(targetPort) {
  const p = { port: await port(), up: true, socks: new Set() };
  p.server = net.createServer((s) => {
    if (!p.up) { s.destroy(); return; }
    const t = net.connect(targetPort, '127.0.0.1');
    p.socks.add(s); p.socks.add(t);
    s.pipe(t); t.pipe(s);
    const end = () => { s.destroy(); t.destroy(); p.socks.delete(s); p.socks.delete(t); };
    s.on('error', end); t.on('error', end); s.on('close', end); t.on('close', end);
  });
  await new Promise((r) => p.server.listen(p.port, '127.0.0.1', r));
  p.cut = () => { p.up = false; for (const s of p.socks) s.destroy(); p.socks.clear(); };
  p.heal = () => { p.up = true; };
  return p;
}
// Route every peer link through proxies: returns { cut(x,y), heal(x,y), cutAll(n), healAll(n) }
export async function meshViaProxies(nodes) {
  const px = {};
  for (const n of nodes) for (const m of nodes) if (n !== m) px[`${n.id}>${m.id}`] = await proxy(m.port);
  for (const n of nodes) { n.config.peers = nodes.filter((m) => m !== n).map((m) => `127.0.0.1:${px[`${n.id}>${m.id}`].port}@${m.id}`); writeConfig(n); }
  const f = (x, y, on) => { for (const k of [`${x}>${y}`, `${y}>${x}`]) px[k][on ? 'heal' : 'cut'](); };
  return { px, cut: (x, y) => f(x, y, false), heal: (x, y) => f(x, y, true),
    isolate: (x) => { for (const n of nodes) if (n.id !== x) f(x, n.id, false); }, rejoin: (x) => { for (const n of nodes) if (n.id !== x) f(x, n.id, true); } };
}

export async function startEtcd() {
  const e = await startEtcdAt(await port(), await port());
  await e.start();
  return e;
}
export async function role(n) { const h = await health(n); return h.body?.role ?? h.body?.status ?? JSON.stringify(h.body).slice(0, 80); }

export async function metrics(n) {
  try { const r = await fetch(`http://127.0.0.1:${n.mport}/metrics`); const t = await r.text(); const m = {};
    for (const line of t.split('\n')) { if (!line || line[0] === '#') continue; const i = line.lastIndexOf(' '); m[line.slice(0, i)] = Number(line.slice(i + 1)); }
    return m; } catch { return null; }
}
export function metric(m, name) { if (!m) return undefined; if (name in m) return m[name]; let s; for (const k of Object.keys(m)) if (k.startsWith(name + '{')) s = (s ?? 0) + m[k]; return s; }
const made = [];
/** ATTACK_LOGS=dir: each broker's output is written there at the end (dir/<serviceId>.log) */
function keepLogs() { const dir = process.env.ATTACK_LOGS; if (!dir) return; mkdirSync(dir, { recursive: true }); for (const n of made) writeFileSync(join(dir, `${n.id ?? n.serviceId}.log`), n.log ?? ''); }
export async function finish(code) { keepLogs(); await cleanup(); await sleep(300); try { rmSync(base, { recursive: true, force: true }); } catch {} process.exit(code ?? 0); }
export function electionBlock(etcdUrl, prefix, leaseTtl = 2) { return { etcd: { hosts: [etcdUrl] }, prefix, leaseTtl }; }
export async function startEtcdAt(cport, pport) {
  const dir = join(base, 'etcd-' + cport);
  const e = { cport, pport, dir, url: `http://127.0.0.1:${cport}` };
  e.start = async () => {
    e.proc = spawn('etcd', ['--name', 'e1', '--data-dir', dir, '--listen-client-urls', e.url, '--advertise-client-urls', e.url,
      '--listen-peer-urls', `http://127.0.0.1:${pport}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${pport}`,
      '--initial-cluster', `e1=http://127.0.0.1:${pport}`], { stdio: 'ignore' });
    procs.push(e.proc);
    for (let i = 0; i < 100; i++) { try { const r = await fetch(e.url + '/health'); if (r.ok) return; } catch {} await sleep(100); }
    throw new Error('etcd did not start');
  };
  e.stop = async () => { if (e.proc && e.proc.exitCode === null) { const d = new Promise((r) => e.proc.once('exit', r)); e.proc.kill('SIGKILL'); await d; } };
  return e;
}
// a timeout(1) or Ctrl-C ends the script: kill its brokers and etcd, remove its temp dir
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => { try { rmSync(base, { recursive: true, force: true }); } catch {} process.exit(143); });
