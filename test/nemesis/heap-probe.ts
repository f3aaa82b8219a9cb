import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { checkHeap } from './checker.js';
import { Cluster, HEARTBEAT_S, PREFETCH, Proc, root } from './cluster.js';

/**
 * A heap probe (issue 27, the nemesis's heap check): the nemesis's cluster and traffic, no fault
 * but one `kill -9` of a slave after `--warm` s, restarted at once; then the heap floors of every
 * broker per 10 s for `--minutes`, and a heap snapshot of the restarted slave every `--snap` s
 * (SIGUSR2, written to --dir). `npx vite-node test/nemesis/heap-probe.ts -- --minutes 6 --warm 40 --snap 90`;
 * a slave short of CPU: `-- --minutes 4 --warm 30 --starve 100 --run-ms 12 --snap 50`. Floors are
 * judged as the nemesis does, without its warm-up rule, over spans from the restart.
 */
const args = process.argv.slice(2);
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1]! : fallback;
};
const minutes = Number(arg('minutes', '6'));
const warmS = Number(arg('warm', '30'));
const snapS = Number(arg('snap', '0'));
const dir = arg('dir', '/tmp/heap-probe');
/** with an LD_PRELOAD shim (test/nemesis/slowio.c, built to --slowio PATH.so): each synced write of the restarted slave waits this long, µs */
const slowUs = Number(arg('slow-us', '0'));
const slowio = arg('slowio', '/tmp/slowio/slowio.so');
/** for this many seconds after the restart the slave runs `--run-ms` in each 100 ms (SIGSTOP/SIGCONT): a starved CPU */
const starveS = Number(arg('starve', '0'));
const runMs = Number(arg('run-ms', '40'));
mkdirSync(dir, { recursive: true });
if (snapS > 0) process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${dir}`.trim();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (line: string) => console.log(`[probe ${new Date().toISOString().slice(11, 19)}] ${line}`);
const cluster = await Cluster.create(log);
let workload: Proc | null = null;
try {
  await cluster.start();
  if (!(await cluster.settled(60_000))) throw new Error('no master');
  const workloadOptions = {
    hosts: cluster.hosts, keysDirectory: join(cluster.dir, 'client-keys'), heartbeatTimeout: HEARTBEAT_S * 1000, sendTimeout: 60_000,
    prefetch: PREFETCH, tickMs: 10, feedPerTick: 2, replayEveryMs: 15_000, deliverTimeoutMs: 60_000, out: join(cluster.dir, 'recorded.json'),
  };
  workload = new Proc([...cluster.clientExec, process.execPath, join(root, 'test/nemesis/workload.mjs'), JSON.stringify(workloadOptions)], {
    stdin: true,
    onLine: (line) => {
      if (line.includes('progress')) log(`traffic ${line}`);
    },
  });
  const start = Date.now();
  await sleep(warmS * 1000);
  const slave = cluster.brokers.find((b) => b !== cluster.master())!;
  log(`kill -9 slave ${slave.name}, restart`);
  await slave.process!.kill('SIGKILL');
  if (slowUs > 0) Object.assign(process.env, { LD_PRELOAD: slowio, SLOWIO_US: String(slowUs) });
  const starting = cluster.startBroker(slave); // spawned now, with this environment
  delete process.env.LD_PRELOAD;
  await starting;
  const restarted = Date.now();
  if (starveS > 0) {
    const pid = slave.process!.child.pid!;
    const starve = setInterval(() => {
      process.kill(pid, 'SIGSTOP');
      setTimeout(() => process.kill(pid, 'SIGCONT'), 100 - runMs);
    }, 100);
    setTimeout(() => clearInterval(starve), starveS * 1000);
  }
  const end = restarted + minutes * 60_000;
  let nextSnap = restarted + snapS * 1000;
  while (Date.now() < end) {
    await sleep(10_000);
    const floors = cluster.brokers.map((b) => {
      const heaps = (cluster.samples.get(b.name) ?? []).filter((s) => s.up === 1 && s.heap && s.t > Date.now() - 10_000).map((s) => s.heap!);
      const lag = (cluster.samples.get(b.name) ?? []).at(-1)?.lag ?? 0;
      return `${b.name}${cluster.master() === b ? '*' : ''} ${(Math.min(...heaps) / 2 ** 20).toFixed(1)} (lag ${lag})`;
    });
    log(`t+${Math.round((Date.now() - restarted) / 1000)} s floors MiB: ${floors.join('  ')}`);
    if (snapS > 0 && Date.now() >= nextSnap) {
      nextSnap += snapS * 1000;
      log(`heap snapshot of ${slave.name} (pid ${slave.process!.child.pid})`);
      slave.process!.child.kill('SIGUSR2');
    }
  }
  log(`restarted slave: ${slave.name}; run started ${Math.round((restarted - start) / 1000)} s before the restart`);
  for (const [fromS, toS] of [[0, 75], [0, minutes * 60], [75, minutes * 60], [120, minutes * 60]] as const) {
    if (toS > minutes * 60 || fromS >= toS) continue;
    const rule = { boundMiBPerMin: 4, warmMs: 0, minMeasureMs: 40_000 };
    for (const v of checkHeap(cluster.samples, restarted + fromS * 1000, restarted + toS * 1000, rule, new Map())) log(`[${fromS}-${toS} s] ${v.ok ? 'ok' : 'FAIL'} ${v.check}: ${v.detail}`);
  }
} finally {
  await workload?.kill();
  await cluster.destroy();
}
process.exit(0);
