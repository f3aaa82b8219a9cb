// The cluster row of `npm run bench` (issue 31), also `node bench/cluster.mjs [--count=N] [--runs=N]
// [--window=N] [--layouts=none,one,two]` (a producer's unanswered sends; which layouts).
// Three layouts on a real etcd (Debian's etcd, started here), alternated in each run, with the
// same clients: 2 producers and 2 consumers (in-process clients, prefetch 100, a window of 2,000
// unanswered sends each unless --window), after --warm messages per broker (default 40,000)
// that are not measured; `count` messages per broker are measured (2 sets: twice as many in all) pass `count` durable messages over 8 queues:
// - `none`: one broker process with an election and no cluster block;
// - `one`: the same broker with a one-set cluster block (the routing cost: one vs none);
// - `two`: two sets of one broker each, the 8 queues pinned 4 and 4, each client seeded with the
//   broker of "its" set (half of its sends and subscriptions routed to the other set).
// Figures: total msg/s (first send -> last delivery) and broker CPU time (utime + stime from
// /proc, summed over the brokers) per message. Not a timed test: docs/performance.md.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { freePort, spawnServer, stopServer, waitForPort } from './servers.mjs';

const QUEUES = Array.from({ length: 8 }, (_, i) => `cl${i}/v1`);
const TICKS = 100; // USER_HZ on Linux
export const LAYOUTS = ['none', 'one', 'two'];
let PROF_DIR = null;

/** a process's CPU time so far, ms: user + system, and system alone */
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return { total: ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS, sys: (Number(fields[12]) * 1000) / TICKS };
}

/** null when etcd can run here, else why not */
export function clusterUnavailable() {
  const paths = (process.env.PATH ?? '').split(':');
  return paths.some((p) => existsSync(join(p, 'etcd'))) ? null : 'no etcd binary on PATH';
}

async function startEtcd(dir) {
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const proc = spawn('etcd', ['--name', 'e0', '--data-dir', join(dir, 'etcd'), '--listen-client-urls', url, '--advertise-client-urls', url, '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer, '--initial-cluster', `e0=${peer}`], { stdio: 'ignore' });
  await waitForPort(clientPort, proc, 15_000, 'etcd');
  return { url, proc };
}

async function startBroker(dir, name, etcdUrl, prefix, set, withCluster, channels) {
  const port = await freePort();
  const home = join(dir, name);
  const config = { serviceId: name, dataDirectory: join(home, 'data'), registeredClientsPath: join(home, 'clients'), keysDirectory: join(home, 'keys'), logLevel: 'warn', maxItemsInQueue: 1_000_000, socketServer: { host: '127.0.0.1', port }, channels };
  // every layout with an election (a cluster needs one): `none` and `one` differ by the cluster block alone
  config.election = { etcd: { hosts: [etcdUrl] }, prefix: `${prefix}-sets/${set}`, leaseTtl: 5 };
  if (withCluster) config.cluster = { prefix, set, advertise: `127.0.0.1:${port}@${name}` };
  rmSync(home, { recursive: true, force: true });
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(config));
  // --cpu-prof-dir=DIR (alone): each broker runs with node --cpu-prof (bench/profile-summary.mjs reads them)
  const profile = PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROF_DIR}`, `--cpu-prof-name=cluster-${prefix.split('-').pop()}-${name}-${Date.now()}.cpuprofile`] : [];
  const proc = spawnServer([...profile, join(import.meta.dirname, '..', 'bin', 'whisker'), 'start', '-c', join(dir, `${name}.json`)], dir);
  await waitForPort(port, proc, 30_000, `broker ${name}`);
  return { proc, host: `127.0.0.1:${port}@${name}` };
}

async function once(layout, etcdUrl, count, client, window, clients, warm) {
  const dir = mkdtempSync(join(tmpdir(), 'whisker-bench-cluster-'));
  const prefix = `/bench/${Date.now()}-${layout}`;
  const sets = layout === 'two' ? ['a', 'b'] : ['a'];
  // pinned 4 and 4 with two sets; with one, every queue is on set a anyway
  const channels = Object.fromEntries(QUEUES.map((q, i) => [q, layout === 'two' ? { set: sets[i % 2] } : {}]));
  const brokers = [];
  for (const set of sets) brokers.push(await startBroker(dir, `s${set}`, etcdUrl, prefix, set, layout !== 'none', channels));
  const pairs = Array.from({ length: clients }, (_, i) => i);
  const seeds = pairs.map((i) => [brokers[i % brokers.length].host]);
  const producers = pairs.map(() => client());
  const consumers = pairs.map(() => client());
  await Promise.all([
    ...producers.map((c, i) => c.connect({ hosts: seeds[i], clientId: `p${i}`, keysDirectory: join(dir, `pk${i}`) })),
    ...consumers.map((c, i) => c.connect({ hosts: seeds[i], clientId: `c${i}`, keysDirectory: join(dir, `ck${i}`) })),
  ]);
  let received = 0;
  let target = Infinity;
  let allIn;
  const handles = consumers.flatMap((c) => QUEUES.map((q) => c.consume(`${q}/x`, { prefetch: 100 }, (_err, _m, ack) => {
    ack();
    if (++received === target) allIn();
  })));
  await Promise.all(handles.map((h) => h.ready));
  // warm-up: the queues placed (etcd), the masters elected, every set dialed, before the measure
  await Promise.all(producers.flatMap((p) => QUEUES.map((q) => p.send(`${q}/x`, { warm: true }))));
  while (received < QUEUES.length * producers.length) await new Promise((r) => setTimeout(r, 10));
  /** `total` messages from the producers, resolved once all were received */
  const pass = async (total) => {
    received = 0;
    target = total;
    const done = new Promise((resolve) => (allIn = resolve));
    const share = Math.ceil(total / producers.length);
    await Promise.all(producers.map((producer, i) => new Promise((resolve) => {
      const mine = Math.min(share, total - i * share);
      let sent = 0;
      let open = 0;
      const pump = () => {
        while (open < window && sent < mine) {
          const q = QUEUES[(sent + i) % QUEUES.length];
          sent++;
          open++;
          producer.send(`${q}/x`, { n: sent }, () => {
            open--;
            if (sent < mine) pump();
            else if (open === 0) resolve();
          });
        }
      };
      pump();
    })));
    await done;
  };
  // every broker warmed up alike (JIT, heap): a fresh process's first tens of thousands of
  // messages cost more, and with 2 sets each broker gets half of them
  if (warm > 0) await pass(warm * brokers.length);
  // `count` per broker: each broker measured over as many messages in every layout
  const measured = count * brokers.length;
  const cpuBefore = brokers.map((b) => cpuMs(b.proc.pid));
  const startedAt = performance.now();
  await pass(measured);
  const seconds = (performance.now() - startedAt) / 1000;
  const after = brokers.map((b) => cpuMs(b.proc.pid));
  const cpu = after.reduce((sum, x, i) => sum + x.total - cpuBefore[i].total, 0);
  const sys = after.reduce((sum, x, i) => sum + x.sys - cpuBefore[i].sys, 0);
  await Promise.all([...producers, ...consumers].map((c) => c.disconnect()));
  await Promise.all(brokers.map((b) => stopServer(b.proc)));
  rmSync(dir, { recursive: true, force: true });
  return { rate: measured / seconds, cpuUsPerMessage: (cpu * 1000) / measured, sysUsPerMessage: (sys * 1000) / measured, brokerCpuPct: (cpu / 10) / seconds };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** runs every layout `runs` times, alternated; medians per layout and the ratios */
export async function measureCluster({ runs = 3, count = 40_000, window = 2000, clients = 2, warm = 40_000, layouts: only = LAYOUTS, log = () => {} } = {}) {
  const { client } = await import(pathToFileURL(join(import.meta.dirname, '..', 'dist', 'index.js')).href);
  const dir = mkdtempSync(join(tmpdir(), 'whisker-bench-etcd-'));
  const etcd = await startEtcd(dir);
  const runsBy = Object.fromEntries(LAYOUTS.map((l) => [l, []]));
  try {
    for (let run = 0; run < runs; run++) {
      for (const layout of only) {
        const result = await once(layout, etcd.url, count, client, window, clients, warm);
        log(`cluster ${layout} run ${run + 1}: ${result.rate.toFixed(0)} msg/s, ${result.cpuUsPerMessage.toFixed(1)} µs broker CPU per message`);
        runsBy[layout].push(result);
      }
    }
  } finally {
    etcd.proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
  const layouts = Object.fromEntries(only.map((l) => [l, { rate: median(runsBy[l].map((r) => r.rate)), cpuUsPerMessage: median(runsBy[l].map((r) => r.cpuUsPerMessage)), sysUsPerMessage: median(runsBy[l].map((r) => r.sysUsPerMessage)), brokerCpuPct: median(runsBy[l].map((r) => r.brokerCpuPct)), runs: runsBy[l] }]));
  return {
    count,
    layouts,
    window,
    clients,
    warm,
    routingCpuRatio: layouts.one && layouts.none ? layouts.one.cpuUsPerMessage / layouts.none.cpuUsPerMessage : null,
    twoSetsRateRatio: layouts.two && layouts.one ? layouts.two.rate / layouts.one.rate : null,
    twoSetsCpuRatio: layouts.two && layouts.one ? layouts.two.cpuUsPerMessage / layouts.one.cpuUsPerMessage : null,
  };
}

const LABELS = { none: 'election, no cluster block (1 broker)', one: 'cluster of 1 set (1 broker)', two: 'cluster of 2 sets (1 broker each)' };

export function printCluster(result) {
  console.log(`\nCluster (issue 31): ${result.clients} producers, ${result.clients} consumers, 8 queues, ${result.count.toLocaleString('en-US')} durable messages measured per broker and run after ${result.warm.toLocaleString('en-US')} per broker to warm it up (medians)`);
  for (const [l, x] of Object.entries(result.layouts)) {
    console.log(`  ${LABELS[l].padEnd(40)} ${x.rate.toFixed(0).padStart(7)} msg/s  ${x.cpuUsPerMessage.toFixed(1).padStart(6)} µs broker CPU per message (${x.sysUsPerMessage.toFixed(1)} system)  ${x.brokerCpuPct.toFixed(0).padStart(4)}% of a core, brokers  (runs: ${x.runs.map((r) => `${r.rate.toFixed(0)}/${r.cpuUsPerMessage.toFixed(1)}`).join(', ')})`);
  }
  if (result.routingCpuRatio !== null) console.log(`  routing cost, CPU per message 1 set / no cluster block: ${result.routingCpuRatio.toFixed(3)}`);
  if (result.twoSetsRateRatio !== null) console.log(`  2 sets / 1 set: msg/s x${result.twoSetsRateRatio.toFixed(2)}, broker CPU per message x${result.twoSetsCpuRatio.toFixed(2)}`);
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
  const layouts = args.layouts ? args.layouts.split(',') : LAYOUTS;
  PROF_DIR = args['cpu-prof-dir'] ?? null;
  const result = await measureCluster({ runs: Number(args.runs ?? 3), count: Number(args.count ?? 40_000), window: Number(args.window ?? 2000), clients: Number(args.clients ?? 2), warm: Number(args.warm ?? 40_000), layouts, log: (l) => console.log(l) });
  printCluster(result);
  process.exit(0);
}
