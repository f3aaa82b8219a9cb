// Kitten-MQ `mq.send(channel, data)` without callback nor await, new angles, each in a child process (exit code, stderr).
// Docs: client.md#promises ("A promise nobody awaits never ends the process"; "the failure goes to the client's error
// event, once: for a send, the error's info.messageId and info.channel say which message; without an error listener it is
// a process warning ...; repeats of the same code within the next second are counted and told as one more line"),
// client.md#send ("A send made while no broker is connected waits in the client and is sent, with the same id, once one
// is"), client.md#connect (disconnect() "fails the sends still waiting with E_DISCONNECTED").
// Child: 50 sends BEFORE connect() is called; connect() (not awaited, Kitten style: mq.on('connect')); 50 more; then the
// master is SIGSTOPped, 300 sends, and disconnect() while they wait: 300 x E_DISCONNECTED; the process then ends by itself.
// Run with and without an error listener. Master a + slave b.
import { makeNodes, start, mkClient, keyPair, sleep, check, finish, waitFor, health, base } from './harness.mjs';
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
const L = await mkClient(nodes, 'd7-lst', keyPair());
await L.listen('k/v1/x', (err, msg) => { if (!err) got.set(`${msg.c}:${msg.i}`, (got.get(`${msg.c}:${msg.i}`) ?? 0) + 1); }).ready;
async function child(name, withListener) {
  const key = keyPair(); const f = join(base, name + '.mjs');
  writeFileSync(f, `
const { client } = await import(${JSON.stringify(join(root, 'dist', 'index.js'))});
const mq = client();
const errs = [];
${withListener ? "mq.on('error', (e) => errs.push({ code: e.code, id: e.info?.messageId }));" : ''}
for (let i = 0; i < 50; i++) mq.send('k/v1/x', { c: ${JSON.stringify(name)}, i });
mq.on('connect', () => process.stdout.write('CONNECTED\\n'));
mq.connect({ hosts: ${JSON.stringify(nodes.map((n) => n.host))}, clientId: ${JSON.stringify(name)}, privateKey: ${JSON.stringify(key.privateKey)}, sendTimeout: 20000 });
for (let i = 50; i < 100; i++) mq.send('k/v1/x', { c: ${JSON.stringify(name)}, i });
await new Promise((r) => setTimeout(r, 3000));
process.send('stop-master');
await new Promise((r) => process.once('message', r));
for (let i = 0; i < 300; i++) mq.send('k/v1/x', { c: ${JSON.stringify(name)}, i: 'w' + i });
await new Promise((r) => setTimeout(r, 500));
mq.disconnect();
await new Promise((r) => setTimeout(r, 1500));
console.log('ERRS ' + JSON.stringify({ n: errs.length, codes: [...new Set(errs.map((e) => e.code))], ids: new Set(errs.map((e) => e.id)).size }));
console.log('CHILD END');
process.send('cont-master');
`);
  const c = spawn('node', [f], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let out = '', err = ''; c.stdout.on('data', (d) => { out += d; }); c.stderr.on('data', (d) => { err += d; });
  c.on('message', (m) => { if (m === 'stop-master') { a.proc.kill('SIGSTOP'); setTimeout(() => c.send('ok'), 200); } else a.proc.kill('SIGCONT'); });
  const code = await new Promise((r) => c.once('exit', r));
  a.proc.kill('SIGCONT');
  return { code, out, err };
}
for (const [name, withL] of [['d7-with', true], ['d7-without', false]]) {
  const r = await child(name, withL);
  await sleep(3000);
  const first = Array.from({ length: 100 }, (_, i) => got.get(`${name}:${i}`) ?? 0);
  const errs = JSON.parse((r.out.match(/ERRS (.*)/) ?? [])[1] ?? '{}');
  const lines = r.err.split('\n').filter(Boolean);
  const unhandled = /UnhandledPromiseRejection|unhandled/i.test(r.err);
  check(`d7 ${name}: sends before and during connect() delivered once, the process ends by itself with exit 0, nothing unhandled`,
    r.code === 0 && r.out.includes('CHILD END') && first.every((v) => v === 1) && !unhandled,
    { exit: r.code, connectedEvent: r.out.includes('CONNECTED'), deliveredOnce: first.filter((v) => v === 1).length, twice: first.filter((v) => v > 1).length, unhandled });
  if (withL) check(`d7 ${name}: 300 sends waiting at disconnect() -> 300 'error' events E_DISCONNECTED, each with its own info.messageId`, errs.n === 300 && errs.ids === 300 && errs.codes?.join() === 'E_DISCONNECTED', { errs, stderrLines: lines.length, stderr: lines.slice(0, 2) });
  else check(`d7 ${name}: without a listener, one warning line plus one "N more" line for the 300 E_DISCONNECTED (repeats collapsed)`,
    lines.length <= 6 && lines.some((l) => /E_DISCONNECTED/.test(l)), { stderrLines: lines.length, stderr: lines.slice(0, 6).map((l) => l.slice(0, 160)) });
}
console.log(up());
await L.disconnect();
await finish(0);
