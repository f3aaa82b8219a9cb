// Kitten-MQ style `mq.send(channel, data)` with neither a callback nor await, in a child process (its exit code and
// stderr observed). Docs: client.md#promises ("A promise nobody awaits never ends the process"; "the failure goes to the
// client's error event, once: for a send, the error's info.messageId and info.channel say which message"; "without an
// error listener it is a process warning ... repeats of the same code within the next second are counted and told as
// one more line"), migrating-from-kitten.md (send without a callback). Master a + slave b.
// Child 1 (error listener): 200 good sends, 5 to a bad channel, 3 of a too large body, 1 of null; then the master is
// stopped (SIGSTOP) and 3 sends wait for sendTimeout (1.5 s) -> E_NO_MASTER. Child 2: the same without an error listener.
import { makeNodes, start, mkClient, keyPair, sleep, check, finish, waitFor, health } from './harness.mjs';
import { execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const up = () => execFileSync('uptime').toString().trim().replace(/.*load/, 'load');
console.log('start', new Date().toISOString(), up());
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const nodes = await makeNodes(['a', 'b'], { logLevel: 'warn' }); const [a, b] = nodes;
await Promise.all(nodes.map(start));
await waitFor(async () => (await health(b)).status === 200, 30000, 200);
const got = new Map();
const L = await mkClient(nodes, 'c7-lst', keyPair());
await L.listen('k/v1/x', (err, msg) => { if (!err) got.set(`${msg.c}:${msg.i}`, (got.get(`${msg.c}:${msg.i}`) ?? 0) + 1); }).ready;
const { base } = await import('./harness.mjs');
async function child(name, withListener) {
  const key = keyPair(); const f = join(base, name + '.mjs');
  writeFileSync(f, `
const { client } = await import(${JSON.stringify(join(root, 'dist', 'index.js'))});
const mq = client();
const errs = [];
${withListener ? "mq.on('error', (e) => errs.push({ code: e.code, id: e.info?.messageId, ch: e.info?.channel?.endpoint ?? (typeof e.info?.channel === 'string' ? e.info.channel : undefined) }));" : ''}
mq.connect({ hosts: ${JSON.stringify(nodes.map((n) => n.host))}, clientId: ${JSON.stringify(name)}, privateKey: ${JSON.stringify(key.privateKey)}, sendTimeout: 1500 });
await new Promise((r) => mq.once('connect', r));
for (let i = 0; i < 200; i++) mq.send('k/v1/x', { c: ${JSON.stringify(name)}, i });
const thrown = [];
const tryIt = (f) => { try { f(); } catch (e) { thrown.push(e.code ?? String(e)); } };
for (let i = 0; i < 5; i++) tryIt(() => mq.send('no channel here', { i }));
for (let i = 0; i < 3; i++) tryIt(() => mq.send('k/v1/x', { c: 'big', i, pad: 'x'.repeat(2 * 1024 * 1024) }));
tryIt(() => mq.send('k/v1/x', null));
console.log('THROWN ' + JSON.stringify(thrown));
await new Promise((r) => setTimeout(r, 2500));
process.send('stop-master');
await new Promise((r) => process.once('message', r));
for (let i = 0; i < 3; i++) mq.send('k/v1/x', { c: ${JSON.stringify(name)}, i: 'nm' + i });
await new Promise((r) => setTimeout(r, 4000));
console.log('ERRS ' + JSON.stringify(errs));
process.send('cont-master');
await new Promise((r) => process.once('message', r));
await mq.disconnect();
console.log('CHILD END');
`);
  const c = spawn('node', [f], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let out = '', err = ''; c.stdout.on('data', (d) => { out += d; }); c.stderr.on('data', (d) => { err += d; });
  c.on('message', (m) => { if (m === 'stop-master') { a.proc.kill('SIGSTOP'); setTimeout(() => c.send('ok'), 200); } else { a.proc.kill('SIGCONT'); setTimeout(() => c.send('ok'), 3000); } });
  const code = await new Promise((r) => c.once('exit', r));
  return { code, out, err };
}
for (const [name, withL] of [['c7-with', true], ['c7-without', false]]) {
  const r = await child(name, withL);
  await sleep(1500);
  const good = Array.from({ length: 200 }, (_, i) => got.get(`${name}:${i}`) ?? 0);
  const nm = [0, 1, 2].map((i) => got.get(`${name}:nm${i}`) ?? 0);
  const errs = JSON.parse((r.out.match(/ERRS (.*)/) ?? [])[1] ?? '[]');
  const codes = {}; for (const e of errs) codes[e.code] = (codes[e.code] ?? 0) + 1;
  const thrown = JSON.parse((r.out.match(/THROWN (.*)/) ?? [])[1] ?? '[]');
  const warnLines = r.err.split('\n').filter((l) => /Warning|E_[A-Z_]+/.test(l));
  const ended = r.out.includes('CHILD END');
  check(`c7 ${name}: the process ran to its end (exit 0), the 200 good sends delivered once`, r.code === 0 && ended && good.every((v) => v === 1), { exit: r.code, ended, goodDelivered: good.filter((v) => v === 1).length, goodTwice: good.filter((v) => v > 1).length, stderrTail: r.err.trim().split('\n').slice(-3) });
  if (withL) check(`c7 ${name}: each failed send reported once on 'error' with info.messageId (5 bad channel, 3 too large, 1 null, 3 E_NO_MASTER)`, errs.length === 12 && errs.filter((e) => e.code !== 'E_NO_VALUE').every((e) => e.id), { codes, thrownSync: thrown, withoutId: errs.filter((e) => !e.id).map((e) => e.code), noMasterLaterDelivered: nm, stderr: warnLines.slice(0, 3) });
  else check(`c7 ${name}: without an error listener, process warnings (repeats collapsed), nothing unhandled`, warnLines.length > 0 && !/UnhandledPromiseRejection|unhandled/i.test(r.err), { thrownSync: thrown, warnLines: warnLines.slice(0, 8), noMasterLaterDelivered: nm });
}
console.log(up());
await L.disconnect();
await finish(0);
