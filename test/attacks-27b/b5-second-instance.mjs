/* eslint-disable @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27, 2nd round): Node 20 global fetch, best-effort cleanup */
// A second instance started by mistake (a second `whisker start` of the same config, or a copy of it with other ports,
// the same dataDirectory). Docs: configuration.md says a port in use exits 1 naming the key; nothing says what a
// second process on the same dataDirectory does. SPEC §8: every accepted message survives any stop.
// (a) same config twice: the second must exit 1 naming the port, the first keep serving;
// (b) same dataDirectory, other ports, while the first takes pipelined sends on a retained channel; then the first is
//     killed -9 and restarted alone: every send answered OK by the first must still be there (queue + replay).
import { makeNodes, start, kill9, stop, health, mkClient, keyPair, sleep, port, check, finish, waitFor, writeConfig } from './harness.mjs';
import { spawn, execFileSync } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
console.log('start', new Date().toISOString(), execFileSync('uptime').toString().trim().replace(/.*load/, 'load'));
const CH = 'si/v1/x';
const [a] = await makeNodes(['a'], { logLevel: 'info', channels: { 'si/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 100000 } } });
await start(a);
const run2 = (cfgPath) => new Promise((r) => { const p = spawn('node', [join(root, 'bin', 'whisker'), 'start', '-c', cfgPath, '--no-watch'], { stdio: ['ignore', 'pipe', 'pipe'] }); let out = '';
  p.stdout.on('data', (d) => { out += d; }); p.stderr.on('data', (d) => { out += d; }); const t = setTimeout(() => r({ p, code: 'running', out }), 6000); p.on('exit', (code) => { clearTimeout(t); r({ p, code, out }); }); });
const r1 = await run2(a.cfgPath); if (r1.code === 'running') r1.p.kill('SIGKILL');
check('b5a the same config started twice: the second exits 1 naming the port or the data directory, the first still answers', r1.code === 1 && /port|data directory/.test(r1.out) && (await health(a)).status === 200, { code: r1.code, out: r1.out.trim().split('\n').at(-1)?.slice(0, 200) });
// (b)
const cfg2 = JSON.parse(JSON.stringify(a.config)); cfg2.socketServer.port = await port(); cfg2.management.port = await port();
const { writeFileSync } = await import('node:fs'); const cfg2Path = join(a.dir, 'config-2.json'); writeFileSync(cfg2Path, JSON.stringify(cfg2));
const prod = await mkClient([a], 'p-b5', keyPair(), { sendTimeout: 20000 });
const res = []; let go = true; const pend = [];
const loop = (async () => { let i = 0; while (go) { for (let b = 0; b < 3; b++) { const j = i++; pend.push(prod.send(CH, { i: j }).then(() => { res[j] = 'OK'; }, (e) => { res[j] = e.code; })); } await sleep(10); } })();
await sleep(1500);
console.log('second process on the same dataDirectory...'); const r2 = await run2(cfg2Path); console.log('second:', r2.code, r2.out.slice(-300));
const second = { code: r2.code, out: r2.out.trim().split('\n').filter((l) => /error|refus|lock|in use|another/i.test(l)).slice(0, 2).join(' | ').slice(0, 300) };
await sleep(3000); go = false; await loop; await Promise.all(pend);
if (r2.code === 'running') { r2.p.kill('SIGKILL'); await sleep(300); }
await prod.disconnect();
const ok = res.filter((v) => v === 'OK').length;
console.log('sends answered', res.length); await kill9(a); await start(a); console.log('a restarted');
const c = await mkClient([a], 'r-b5', keyPair(), { sendTimeout: 10000 });
const seen = new Set(); try { for await (const x of c.replay(CH, {})) seen.add(x.data.i); } catch (e) { second.replayErr = e.code; }
const missing = res.map((v, i) => (v === 'OK' && !seen.has(i) ? i : -1)).filter((i) => i >= 0);
const queued = new Set(); const h = c.listen(CH, (err, msg) => { if (!err) queued.add(msg.i); }); await h.ready; await sleep(3000);
const notQueued = res.map((v, i) => (v === 'OK' && !queued.has(i) ? i : -1)).filter((i) => i >= 0);
check('b5b a second process on the same dataDirectory (other ports) is refused, or at least every OK send survives (replay + queue after kill -9/restart)',
  r2.code !== 'running' || (missing.length === 0 && notQueued.length === 0), { second, sent: res.length, ok, missingFromReplay: missing.length, notRedelivered: notQueued.length, log: (a.log.match(/[^\n]*(error|corrupt|torn|skipp)[^\n]*/gi) ?? []).slice(0, 3).map((l) => l.slice(0, 200)) });
await c.disconnect();
await finish(0);
