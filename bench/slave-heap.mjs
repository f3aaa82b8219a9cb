// A master and its slave as broker processes under steady traffic (500 msg/s of 1 KB asked, one
// consumer acking through both), their heap after each full GC from --trace-gc (Mark-Compact
// "-> N MB"): a slave's memory must be as flat as its master's (issue 27 item 11).
// Usage: node bench/slave-heap.mjs [ROOT (a checkout with bin/ and dist/, default this one)] [PORT (2 free ports from it, default 47110)] [SECONDS (default 200)]
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
const root = process.argv[2] ?? join(fileURLToPath(import.meta.url), '..', '..');
const portBase = Number(process.argv[3] ?? 47110);
const seconds = Number(process.argv[4] ?? 200);
const { client } = await import('../dist/index.js');
const ports = [portBase, portBase + 1];
const specs = ports.map((p, i) => `127.0.0.1:${p}@${'ms'[i]}`);
const gcs = { m: [], s: [] };
const procs = [];
for (let i = 0; i < 2; i++) {
  const dir = mkdtempSync(join(tmpdir(), 'soak-'));
  const cfg = join(dir, 'config.json');
  writeFileSync(cfg, JSON.stringify({ serviceId: 'ms'[i], isMaster: i === 0, peers: [specs[1 - i]], socketServer: { host: '127.0.0.1', port: ports[i] }, dataDirectory: 'data', registeredClientsPath: 'clients', keysDirectory: 'keys', logLevel: 'warn', maxItemsInQueue: 100000 }));
  const child = spawn(process.execPath, ['--trace-gc', join(root, 'bin/whisker'), 'start', '-c', cfg], { stdio: ['ignore', 'pipe', 'inherit'] });
  procs.push(child);
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl); buf = buf.slice(nl + 1);
      const m = /(\d+) ms: Mark-Compact[^>]*-> ([\d.]+) \(/.exec(line);
      if (m) gcs['ms'[i]].push([Number(m[1]) / 1000, Number(m[2])]);
    }
  });
}
process.on('exit', () => procs.forEach((p) => p.kill('SIGKILL')));
await new Promise((r) => setTimeout(r, 3000));
const keys = mkdtempSync(join(tmpdir(), 'soak-keys-'));
const mk = async (name) => { const c = client(); await c.connect({ hosts: specs, clientId: name, keysDirectory: keys, keysName: name }); return c; };
const consumer = await mk('soak-consumer');
let acked = 0;
await consumer.consume('soak/v1/*', { prefetch: 200 }, (err, _m, done) => { if (!err) { acked++; done(); } }).ready;
const producer = await mk('soak-producer');
const body = 'x'.repeat(1000);
let sent = 0;
const t0 = Date.now();
const timer = setInterval(() => { for (let i = 0; i < 5; i++) producer.send(`soak/v1/${sent % 10}`, { n: sent++, body }).catch(() => {}); }, 10);
const report = setInterval(() => {
  const last = (a) => a.length ? a[a.length - 1] : null;
  console.log(`t=${Math.round((Date.now() - t0) / 1000)}s sent ${sent} acked ${acked} last MC master ${JSON.stringify(last(gcs.m))} slave ${JSON.stringify(last(gcs.s))} (#MC m ${gcs.m.length} s ${gcs.s.length})`);
}, 30_000);
await new Promise((r) => setTimeout(r, seconds * 1000));
clearInterval(timer); clearInterval(report);
console.log(JSON.stringify({ root, sent, acked, rate: Math.round(sent / seconds), master: gcs.m, slave: gcs.s }));
// growth of the post-GC heap from 30 s on, in MB a minute
for (const [name, samples] of [['master', gcs.m], ['slave', gcs.s]]) {
  const warm = samples.filter(([t]) => t >= 30);
  const [first, last] = [warm[0], warm[warm.length - 1]];
  const perMin = first && last && last[0] > first[0] ? ((last[1] - first[1]) / ((last[0] - first[0]) / 60)).toFixed(1) : 'n/a';
  console.log(`${name}: heap after GC ${samples.map(([, mb]) => mb).join(' ')} MB; ${perMin} MB/min after 30 s`);
}
process.exit(0);
