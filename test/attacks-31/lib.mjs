// Harness for the issue-31 attacks: real etcd, real broker processes (bin/whisker start), clients from dist/.
import { spawn, execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const bin = join(root, 'bin', 'whisker');
export const { client } = await import(join(root, 'dist', 'index.js'));
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const load = () => execFileSync('uptime').toString().trim().replace(/.*load average: /, 'load ');
const children = new Set();
process.on('exit', () => { for (const c of children) try { c.kill('SIGKILL'); } catch { /* gone already */ } });
for (const s of ['SIGINT', 'SIGTERM']) process.on(s, () => process.exit(130));

export function freePort() {
  return new Promise((res) => { const s = createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });
}
export const tmp = (p) => mkdtempSync(join(tmpdir(), p));

export async function startEtcd(url, peer) {
  url ??= `http://127.0.0.1:${await freePort()}`;
  peer ??= `http://127.0.0.1:${await freePort()}`;
  const dir = tmp('atk31-etcd-');
  const e = { url, peer, dir, child: null };
  e.start = async () => {
    const c = spawn('etcd', ['--name', 'e0', '--data-dir', dir, '--listen-client-urls', url, '--advertise-client-urls', url,
      '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer, '--initial-cluster', `e0=${peer}`], { stdio: ['ignore', 'ignore', 'pipe'] });
    children.add(c); e.child = c;
    await new Promise((res, rej) => { let buf = ''; const t = setTimeout(() => rej(new Error('etcd no start')), 20000);
      c.stderr.on('data', (d) => { buf += d; if (/ready to serve client requests|serving insecure client requests/.test(buf)) { clearTimeout(t); res(); } }); });
  };
  e.kill = async () => { const c = e.child; if (!c) return; c.kill('SIGKILL'); children.delete(c); await new Promise((r) => c.exitCode !== null || c.signalCode ? r() : c.on('exit', r)); e.child = null; };
  return e;
}

/** sets: { a: ['a1','a2'], b: [...] }; extra(set) merged into each config */
export async function startCluster(etcdUrl, sets, extra = () => ({}), leaseTtl = 2) {
  const prefix = `/atk31/c${process.pid}${Date.now()}`;
  const nodes = [];
  for (const [set, ids] of Object.entries(sets)) {
    const group = [];
    for (const id of ids) { const port = await freePort(); group.push({ id, set, port, spec: `127.0.0.1:${port}@${id}`, dir: tmp(`atk31-${id}-`) }); }
    for (const n of group) {
      n.config = join(n.dir, 'config.json');
      writeFileSync(n.config, JSON.stringify({ serviceId: n.id, dataDirectory: 'data', registeredClientsPath: 'clients', keysDirectory: 'keys', logLevel: 'info',
        peers: group.filter((o) => o !== n).map((o) => o.spec), socketServer: { host: '127.0.0.1', port: n.port },
        maxItemsInQueue: 1000000, requeueInterval: 30,
        election: { etcd: { hosts: [etcdUrl] }, prefix: `${prefix}-sets/${set}`, leaseTtl },
        cluster: { prefix, set, advertise: n.spec }, ...extra(set) }, null, 2));
      nodes.push(n);
    }
  }
  await Promise.all(nodes.map(startNode));
  return nodes;
}

export function startNode(n) {
  const c = spawn('nice', ['-n', '10', process.execPath, bin, 'start', '-c', n.config], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(c); n.child = c; n.role = 'slave'; n.log = []; n.watchers = [];
  let buf = '';
  const onLine = (line) => {
    n.log.push(line);
    if (line.includes('this broker acts as master')) { n.role = 'master'; n.masterSince = Date.now(); }
    if (line.includes('this broker acts as slave')) n.role = 'slave';
    for (const w of [...n.watchers]) if (line.includes(w.text)) { n.watchers.splice(n.watchers.indexOf(w), 1); w.res(line); }
  };
  c.stdout.on('data', (d) => { buf += d; let i; while ((i = buf.indexOf('\n')) >= 0) { onLine(buf.slice(0, i)); buf = buf.slice(i + 1); } });
  c.stderr.on('data', (d) => n.log.push('ERR ' + d));
  return new Promise((res, rej) => { const t = setTimeout(() => rej(new Error(`${n.id} no start`)), 30000);
    const check = setInterval(() => { if (n.log.some((l) => l.includes('broker started'))) { clearInterval(check); clearTimeout(t); res(n); } }, 100);
    c.on('exit', (code) => { if (n.child === c) n.exited = code; }); });
}
export function waitLog(n, text, ms = 60000) {
  return new Promise((res, rej) => { const w = { text, res }; n.watchers.push(w); setTimeout(() => rej(new Error(`${n.id}: no "${text}" in ${ms} ms`)), ms).unref(); });
}
export async function kill9(n) { const c = n.child; c.kill('SIGKILL'); children.delete(c); n.role = 'dead'; await new Promise((r) => (c.exitCode !== null || c.signalCode) ? r() : c.on('exit', r)); }
export async function waitMaster(nodes, set, ms = 30000) {
  const end = Date.now() + ms;
  while (Date.now() < end) { const m = nodes.find((n) => n.set === set && n.role === 'master'); if (m) return m; await sleep(100); }
  throw new Error(`no master in set ${set}`);
}
export function cli(args, timeoutMs = 180000) {
  const t0 = Date.now();
  const r = spawnSync('nice', ['-n', '10', process.execPath, bin, ...args], { cwd: root, encoding: 'utf8', timeout: timeoutMs });
  return { code: r.status, out: (r.stdout ?? '') + (r.stderr ?? ''), ms: Date.now() - t0 };
}
export function cliAsync(args) {
  const t0 = Date.now();
  return new Promise((res) => { const c = spawn('nice', ['-n', '10', process.execPath, bin, ...args], { cwd: root }); let out = '';
    c.stdout.on('data', (d) => out += d); c.stderr.on('data', (d) => out += d); c.on('exit', (code) => res({ code, out, ms: Date.now() - t0 })); });
}
const keyDirs = new Map();
export async function mkClient(name, hosts, extra = {}) {
  if (!keyDirs.has(name)) keyDirs.set(name, tmp(`atk31-keys-${name}-`));
  const dir = keyDirs.get(name);
  const mq = client(); const errors = [];
  mq.on('error', (e) => errors.push(e.code));
  await mq.connect({ hosts, clientId: name, keysDirectory: dir, ...extra });
  mq.errors = errors;
  return mq;
}

/** per-id order tracker: records message {id, seq}; counts duplicates and order breaks */
export function tracker() {
  const t = { seen: new Set(), last: new Map(), dups: 0, breaks: 0, count: 0, lastAt: 0, gaps: [] };
  t.add = (m) => {
    const now = Date.now(); if (t.lastAt && now - t.lastAt > 0) t.gaps.push(now - t.lastAt); t.lastAt = now;
    const key = `${m.id}:${m.seq}`;
    if (t.seen.has(key)) { t.dups++; return; }
    t.seen.add(key); t.count++;
    const l = t.last.get(m.id) ?? -1; if (m.seq < l) t.breaks++; else t.last.set(m.id, m.seq);
  };
  t.maxGap = () => t.gaps.reduce((a, b) => Math.max(a, b), 0);
  return t;
}
