// Issue 27 item 1 with a second instance: an election pair a, b + etcd; while a is the elected master and a producer
// sends every 5 ms, a second process is started on a's config (same data directory, same serviceId), then on b's.
// Docs: operations.md#start ("another broker is running on this data directory ... exit 1" as b5 saw), #automatic-failover
// (one elected master; a broker acts as slave until it holds the lease). Expected: each second instance exits 1 without
// ever answering /health as master; a stays master under the same epoch; no send lost (every OK delivered once to a
// listener), never two masters on /health.
import { makeNodes, start, health, mkClient, keyPair, sleep, check, finish, startEtcd, electionBlock, waitFor, writeConfig } from './harness.mjs';
import { execFileSync, spawn } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up());
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const etcd = await startEtcd();
const nodes = await makeNodes(['a', 'b'], { election: electionBlock(etcd.url, '/atk27d/d8-' + process.pid, 2), heartbeatTimeout: 2, logLevel: 'info' });
for (const n of nodes) { n.config.isMaster = true; writeConfig(n); }
const [a, b] = nodes;
await start(a); await waitFor(async () => (await health(a)).body?.role === 'master', 30000, 100);
await start(b); await waitFor(async () => (await health(b)).status === 200, 30000, 200);
const epoch0 = (await health(a)).body?.election?.epoch;
const CH = 'jobs/v1/x'; const seen = new Map();
const L = await mkClient(nodes, 'd8-l', keyPair());
await L.listen(CH, (err, m, info) => { if (!err) seen.set(info.messageId, (seen.get(info.messageId) ?? 0) + 1); }).ready;
const P = await mkClient(nodes, 'd8-p', keyPair(), { sendTimeout: 10000 });
const ans = []; const pend = []; let run = true;
const loop = (async () => { while (run) { pend.push(new Promise((r) => P.send(CH, { x: 1 }, (err, _n, info) => { ans.push({ code: err ? err.code : 'OK', id: info?.messageId ?? err?.info?.messageId, sb: (err?.info?.storedBy ?? []).length }); r(); }))); await sleep(5); } })();
const samples = []; let sampling = true;
const sampler = (async () => { while (sampling) { const hs = await Promise.all(nodes.map(health)); samples.push(hs.map((h) => h.body?.role)); await sleep(25); } })();
await sleep(1500);
const seconds = [];
for (const n of [a, b]) {
  const p = spawn('node', [join(root, 'bin', 'whisker'), 'start', '-c', n.cfgPath, '--no-watch'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = ''; p.stdout.on('data', (d) => { out += d; }); p.stderr.on('data', (d) => { out += d; });
  const code = await Promise.race([new Promise((r) => p.once('exit', r)), sleep(20000).then(() => 'still running')]);
  if (code === 'still running') p.kill('SIGKILL');
  seconds.push({ of: n.id, exit: code, says: out.trim().split('\n').filter((l) => /another|running|error/i.test(l)).slice(0, 1).map((l) => l.slice(0, 200)) });
  await sleep(1500);
}
run = false; await loop; await Promise.all(pend);
await sleep(3000); sampling = false; await sampler;
const epoch1 = (await health(a)).body?.election?.epoch;
const want = ans.filter((x) => x.code === 'OK' || x.sb).map((x) => x.id);
await waitFor(() => want.every((id) => seen.has(id)), 15000, 200);
const lost = want.filter((id) => !seen.has(id)).length, twice = [...seen.values()].filter((v) => v > 1).length;
const two = samples.filter((s) => s.filter((r) => r === 'master').length > 1).length;
const tally = {}; for (const x of ans) tally[x.code] = (tally[x.code] ?? 0) + 1;
check('d8 a second instance on the elected master\'s config and on the slave\'s: each exits 1, a stays master under the same epoch, never two masters, 0 lost, 0 twice',
  seconds.every((s) => s.exit === 1) && epoch0 === epoch1 && two === 0 && lost === 0 && twice === 0 && samples.every((s) => s[0] === 'master'),
  { seconds, epoch0, epoch1, samples: samples.length, twoMasterSamples: two, aNotMasterSamples: samples.filter((s) => s[0] !== 'master').length, answers: tally, lost, twice });
console.log(up());
await P.disconnect(); await L.disconnect();
await finish(0);
