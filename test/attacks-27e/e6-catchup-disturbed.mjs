/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// Angle 6: things done to a broker while it catches up. Configured pair (a master, b slave), two producers pipelining BURST
// sends every 5 ms; producer 0 reaches each broker through a TCP proxy that is cut (its sockets destroyed) and healed.
// Phase slave: b killed -9, restarted; right after it listens: a second instance on b's config, `whisker reload` of b,
// producer 0's link to b cut and healed 300 ms later; then b in step. Phase master: the same to a (the configured master
// holding its clients' copies until the offers end). Promises: operations.md#catching-up, #history-catch-up, SPEC §7,
// the second instance refused (exit 1, `another broker is running on this data directory`).
import { makeNodes, start, kill9, sleep, finish, waitFor, check, proxy, cli, base } from './harness.mjs';
import { up, listener, producers, verdict, consumer, analyse, bad, drain } from './common.mjs';
import { spawn } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BURST = Number(process.env.BURST ?? 3);
console.log('start', new Date().toISOString(), up(), { BURST });
const CH = 'rt/v1/x';
const nodes = await makeNodes(['a', 'b'], { heartbeatTimeout: 2, logLevel: 'info', channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 200000 } } });
const [a, b] = nodes;
await start(a); await start(b);
await waitFor(() => /"msg":"in step with the master/.test(b.log), 30000, 100);
const px = { a: await proxy(a.port), b: await proxy(b.port) };
const viaPx = nodes.map((n) => ({ host: `127.0.0.1:${px[n.id].port}@${n.id}` }));
const L = await listener(nodes, CH); const C = await consumer(nodes, CH);
const p0 = await producers(viaPx, CH, { P: 1, burst: BURST, gap: 5, sendTimeout: 1500, name: 'px' });
const p1 = await producers(nodes, CH, { P: 1, burst: BURST, gap: 5, sendTimeout: 1500, name: 'pd', first: 1 });
const ps = [p0[0], p1[0]];
ps.stop = async () => { await p0.stop(); await p1.stop(); };
await sleep(3000);
const second = (n) => new Promise((r) => { const p = spawn('node', [join(root, 'bin', 'whisker'), 'start', '-c', n.cfgPath, '--no-watch'], { stdio: ['ignore', 'pipe', 'pipe'] }); let o = ''; p.stdout.on('data', (d) => { o += d; }); p.stderr.on('data', (d) => { o += d; }); const t = setTimeout(() => { p.kill('SIGKILL'); r({ code: 'still running after 8 s', out: o.slice(0, 200) }); }, 8000); p.on('exit', (code) => { clearTimeout(t); r({ code, out: (o.match(/another broker[^\n"]*/) ?? [o.slice(0, 160)])[0] }); }); });
const seen = {};
for (const ph of (process.env.PHASES ?? 'slave,master').split(',')) {
  const n = ph === 'slave' ? b : a;
  await kill9(n); await sleep(1500);
  const mark = n.log.length; const mb = b.log.length; await start(n);
  const [sec, rel] = await Promise.all([second(n), cli(n, 'reload'), (async () => { px[n.id].cut(); await sleep(300); px[n.id].heal(); })()]);
  const caught = await waitFor(() => /"msg":"in step with the master/.test(b.log.slice(mb)), 60000, 100);
  const lg = n.log.slice(mark);
  seen[ph] = { secondInstance: sec, reload: `${rel.code} ${rel.out.trim().slice(0, 120)}`, inStep: !!caught, reloadDuringCatchUp: !/held while catching up are queued/.test(lg.slice(0, lg.indexOf('reload') >= 0 ? lg.indexOf('reload') : 0)),
    queued: (lg.match(/[^\n]*held while catching up are queued[^\n]*/g) ?? []).map((x) => x.slice(0, 200)) };
  check(`e6 ${ph}: second instance during the catch-up refused`, sec.code === 1 && /another broker/.test(sec.out), seen[ph].secondInstance);
  console.log(ph, JSON.stringify(seen[ph]), up());
  await sleep(3000);
}
await ps.stop(); await sleep(3000);
await verdict('e6 second instance + reload + a producer link cut during the catch-up of the slave, then of the master: listener + replays in send order, 0 lost, 0 twice, equal', nodes, CH, ps, L, {});
const tw = Date.now(); const want = ps.flatMap((pr) => pr.res.map((x, k) => [pr.i, k, x])).filter(([, , x]) => x === 'OK' || /^[A-Z_]+:.+/.test(x));
while (Date.now() - tw < 20000 && !want.every(([p, k]) => C.seen.has(p + ':' + k))) await sleep(250);
await drain(C, ps);
const rc = analyse(C.firsts, ps);
check('e6: consumer first deliveries in send order per producer, none missing', bad(rc) === 0, { consumer: rc, drain: C.drainInfo, deliveries: C.count, load: up() });
await finish(0);
