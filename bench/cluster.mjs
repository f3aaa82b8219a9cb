// The cluster row of `npm run bench` (issue 31), also `node bench/cluster.mjs [--count=N] [--runs=N]
// [--warm=N] [--window=N] [--clients=N] [--rate=N] [--layouts=none,one,two] [--counters]
// [--cpu-prof-dir=DIR]`. Method and figures: docs/performance.md#the-cluster-row.
// Three layouts on a real etcd (Debian's etcd, started here), alternated in each run (the order
// turning from run to run), with the
// same clients: 2 producers and 2 consumers (in-process clients, prefetch 100, a window of 2,000
// unanswered sends each unless --window), 8 durable queues:
// - `none`: one broker process with an election and no cluster block;
// - `one`: the same broker with a one-set cluster block (the routing cost: one vs none);
// - `two`: two sets of one broker each, the 8 queues pinned 4 and 4, each client seeded with the
//   broker of "its" set (half of its sends and subscriptions routed to the other set).
// Each broker first handles --warm messages (not measured), then sits idle for 4 s (its idle
// CPU is measured over the last 2), then two passes of `count` messages per broker are measured:
// - saturated: the producers send as fast as their window lets them: total msg/s;
// - paced: the producers send --rate messages a second per broker (default 8,000; 0: no paced
//   pass) in fixed batches every 5 ms, so each broker gets the same batches in every layout and
//   the CPU per message compares like with like (a broker at half the load batches less: more
//   frames and commits per message). A loaded machine delays the ticks: the rate reached is shown.
// Figures per pass: broker CPU time (utime + stime from /proc, summed over the brokers) per
// message, the benchmark process's (the clients'), etcd's, the rest of the machine's (a
// disturbance), and frames from the clients to the brokers per message. Not a timed test.
/* global fetch */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { freePort, spawnServer, stopServer, waitForPort } from './servers.mjs';

const ROOT = join(import.meta.dirname, '..');
const QUEUES = Array.from({ length: 8 }, (_, i) => `cl${i}/v1`);
const TICKS = 100; // USER_HZ on Linux
const IDLE_MS = 2_000;
/** paced passes: each producer sends its batch every TICK_MS */
const TICK_MS = 5;
export const LAYOUTS = ['none', 'one', 'two'];
let PROF_DIR = null;

/** a process's CPU time so far, ms: user + system, and system alone */
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return { total: ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS, sys: (Number(fields[12]) * 1000) / TICKS };
}

/** machine-wide busy CPU time, ms (/proc/stat) */
function machineBusyMs() {
  const [user, nice, system, , , irq, softirq] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return ((user + nice + system + irq + softirq) * 1000) / TICKS;
}

/** this process's CPU time so far, ms (the in-process clients) */
function ownMs() {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/**
 * Frames the in-process clients write to the brokers and read from them, counted on the `ws`
 * the client library uses (wrapped once: a few ns per frame, in the clients' process only).
 */
const frames = { out: 0, in: 0 };
function countFrames() {
  const WebSocket = createRequire(join(ROOT, 'package.json'))('ws');
  if (WebSocket.prototype.__benchCounted) return;
  const { send, emit } = WebSocket.prototype;
  WebSocket.prototype.send = function (...args) {
    frames.out++;
    return send.apply(this, args);
  };
  WebSocket.prototype.emit = function (event, ...args) {
    if (event === 'message') frames.in++;
    return emit.call(this, event, ...args);
  };
  WebSocket.prototype.__benchCounted = true;
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

async function startBroker(dir, name, etcdUrl, prefix, set, withCluster, channels, counters) {
  const port = await freePort();
  const home = join(dir, name);
  const config = { serviceId: name, dataDirectory: join(home, 'data'), registeredClientsPath: join(home, 'clients'), keysDirectory: join(home, 'keys'), logLevel: 'warn', maxItemsInQueue: 1_000_000, socketServer: { host: '127.0.0.1', port }, channels };
  // every layout with an election (a cluster needs one): `none` and `one` differ by the cluster block alone
  config.election = { etcd: { hosts: [etcdUrl] }, prefix: `${prefix}-sets/${set}`, leaseTtl: 5 };
  if (withCluster) config.cluster = { prefix, set, advertise: `127.0.0.1:${port}@${name}` };
  // --counters: a metrics endpoint to read what each broker received, delivered, acked and committed
  const managementPort = counters ? await freePort() : null;
  if (managementPort) config.management = { host: '127.0.0.1', port: managementPort };
  rmSync(home, { recursive: true, force: true });
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(config));
  // --cpu-prof-dir=DIR: each broker runs with node --cpu-prof (bench/profile-summary.mjs reads them)
  const profile = PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROF_DIR}`, `--cpu-prof-name=cluster-${prefix.split('-').pop()}-${name}-${Date.now()}.cpuprofile`] : [];
  const proc = spawnServer([...profile, join(ROOT, 'bin', 'whisker'), 'start', '-c', join(dir, `${name}.json`)], dir);
  await waitForPort(port, proc, 30_000, `broker ${name}`);
  return { proc, host: `127.0.0.1:${port}@${name}`, managementPort };
}

const COUNTED = { received: 'whisker_messages_received_total', delivered: 'whisker_messages_delivered_total', acked: 'whisker_messages_acked_total', commits: 'whisker_store_append_seconds_count' };

/** a broker's counters from its /metrics (--counters), summed over labels */
async function counters(broker) {
  if (!broker.managementPort) return null;
  const text = await (await fetch(`http://127.0.0.1:${broker.managementPort}/metrics`)).text();
  const out = {};
  for (const [key, name] of Object.entries(COUNTED)) {
    out[key] = 0;
    for (const line of text.split('\n')) if (line.startsWith(name) && (line[name.length] === ' ' || line[name.length] === '{')) out[key] += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return out;
}

/** what the machine and the processes did so far */
async function snapshot(brokers, etcd) {
  const c = await Promise.all(brokers.map(counters));
  return { at: performance.now(), brokers: brokers.map((b) => cpuMs(b.proc.pid)), own: ownMs(), etcd: cpuMs(etcd.pid).total, machine: machineBusyMs(), framesOut: frames.out, framesIn: frames.in, counters: c };
}

function difference(before, after, messages, idleMsPerSecond) {
  const seconds = (after.at - before.at) / 1000;
  const perBroker = after.brokers.map((x, i) => x.total - before.brokers[i].total);
  const broker = perBroker.reduce((a, b) => a + b, 0);
  const sys = after.brokers.reduce((sum, x, i) => sum + x.sys - before.brokers[i].sys, 0);
  const own = after.own - before.own;
  const etcd = after.etcd - before.etcd;
  const other = Math.max(0, after.machine - before.machine - broker - own - etcd);
  const us = (ms) => (ms * 1000) / messages;
  const result = {
    messages,
    seconds,
    rate: messages / seconds,
    cpuUsPerMessage: us(broker),
    sysUsPerMessage: us(sys),
    perBrokerUsPerMessage: perBroker.map((ms) => us(ms * perBroker.length)),
    // the brokers' idle cost over the pass, per message: what a broker burns doing nothing (timers, etcd lease)
    idleUsPerMessage: us(idleMsPerSecond * seconds),
    clientUsPerMessage: us(own),
    etcdUsPerMessage: us(etcd),
    brokerCpuPct: broker / 10 / seconds,
    clientCpuPct: own / 10 / seconds,
    otherCpuPct: other / 10 / seconds,
    framesToBrokersPerMessage: (after.framesOut - before.framesOut) / messages,
    framesFromBrokersPerMessage: (after.framesIn - before.framesIn) / messages,
  };
  if (after.counters[0]) {
    result.counters = after.counters.map((c, i) => Object.fromEntries(Object.keys(c).map((k) => [k, c[k] - before.counters[i][k]])));
    result.commitsPerMessage = result.counters.reduce((sum, c) => sum + c.commits, 0) / messages;
  }
  return result;
}

async function once(layout, etcd, { count, client, window, clients, warm, rate, withCounters }) {
  const dir = mkdtempSync(join(tmpdir(), 'whisker-bench-cluster-'));
  const prefix = `/bench/${Date.now()}-${layout}`;
  const sets = layout === 'two' ? ['a', 'b'] : ['a'];
  // pinned 4 and 4 with two sets; with one, every queue is on set a anyway
  const channels = Object.fromEntries(QUEUES.map((q, i) => [q, layout === 'two' ? { set: sets[i % 2] } : {}]));
  const brokers = [];
  for (const set of sets) brokers.push(await startBroker(dir, `s${set}`, etcd.url, prefix, set, layout !== 'none', channels, withCounters));
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
  /**
   * `total` messages from the producers, resolved once all were received; `perSecond` (total
   * over the producers) paces them, else each sends as fast as its window lets it
   */
  const pass = async (total, perSecond = null) => {
    received = 0;
    target = total;
    const done = new Promise((resolve) => (allIn = resolve));
    const share = Math.ceil(total / producers.length);
    await Promise.all(producers.map((producer, i) => new Promise((resolve) => {
      const mine = Math.min(share, total - i * share);
      // paced: a fixed batch per tick (not what the clock says is due: a producer whose ticks
      // come late would send bigger batches, and a broker's cost per message follows the batch)
      const perTick = perSecond === null ? 0 : Math.max(1, Math.round((perSecond * TICK_MS) / 1000 / producers.length));
      let ticks = 0;
      const due = perSecond === null ? () => mine : () => Math.min(mine, ticks * perTick);
      let sent = 0;
      let open = 0;
      let timer = null;
      const pump = () => {
        const until = due();
        while (open < window && sent < until) {
          const q = QUEUES[(sent + i) % QUEUES.length];
          sent++;
          open++;
          producer.send(`${q}/x`, { n: sent }, () => {
            open--;
            // paced: sends leave on the timer's ticks only, a fixed batch per tick in every layout
            // (sending what is due from each answer makes the batches depend on reply timing)
            if (sent < mine) {
              if (perSecond === null) pump();
            } else if (open === 0) {
              if (timer) clearInterval(timer);
              resolve();
            }
          });
        }
      };
      if (perSecond !== null) timer = setInterval(() => (ticks++, pump()), TICK_MS);
      pump();
    })));
    await done;
  };
  // every broker warmed up alike (JIT, heap): a fresh process's first tens of thousands of
  // messages cost more, and with 2 sets each broker gets half of them
  if (warm > 0) await pass(warm * brokers.length);
  // nothing sent for a while: each broker's idle cost (timers, the etcd lease and watches),
  // measured after a settle as long (the tail of the warm-up's commits and collections)
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const idleFrom = brokers.map((b) => cpuMs(b.proc.pid).total);
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const idleMsPerSecond = brokers.reduce((sum, b, i) => sum + cpuMs(b.proc.pid).total - idleFrom[i], 0) / (IDLE_MS / 1000);
  // `count` per broker: each broker measured over as many messages in every layout
  const measured = count * brokers.length;
  const measure = async (perSecond) => {
    const before = await snapshot(brokers, etcd.proc);
    await pass(measured, perSecond);
    const after = await snapshot(brokers, etcd.proc);
    return difference(before, after, measured, idleMsPerSecond);
  };
  const saturated = await measure(null);
  const paced = rate > 0 ? await measure(rate * brokers.length) : null;
  if (paced) paced.target = rate * brokers.length;
  await Promise.all([...producers, ...consumers].map((c) => c.disconnect()));
  await Promise.all(brokers.map((b) => stopServer(b.proc)));
  rmSync(dir, { recursive: true, force: true });
  return { saturated, paced, idleMsPerSecond };
}

const sorted = (xs) => [...xs].sort((a, b) => a - b);
const median = (xs) => sorted(xs)[Math.floor(xs.length / 2)];
const spread = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });

/** runs every layout `runs` times, alternated; per layout and pass the medians and spreads, and the ratios of each run's pair */
export async function measureCluster({ runs = 3, count = 40_000, window = 2000, clients = 2, warm = 40_000, rate = 8_000, counters: withCounters = false, layouts: only = LAYOUTS, log = () => {} } = {}) {
  const { client } = await import(pathToFileURL(join(ROOT, 'dist', 'index.js')).href);
  countFrames();
  const dir = mkdtempSync(join(tmpdir(), 'whisker-bench-etcd-'));
  const etcd = await startEtcd(dir);
  const runsBy = Object.fromEntries(only.map((l) => [l, []]));
  const load = { start: loadavg(), end: null };
  try {
    for (let run = 0; run < runs; run++) {
      // the order turns each run (none one two, one two none, ...): no layout always first after a start or last
      for (const layout of only.map((_, i) => only[(i + run) % only.length])) {
        const result = await once(layout, etcd, { count, client, window, clients, warm, rate, withCounters });
        const { saturated: s, paced: p } = result;
        log(`cluster ${layout} run ${run + 1}: ${s.rate.toFixed(0)} msg/s, ${s.cpuUsPerMessage.toFixed(1)} µs broker CPU per message${p ? `; paced at ${p.target}/s: ${p.rate.toFixed(0)} msg/s, ${p.cpuUsPerMessage.toFixed(1)} µs` : ''} (other ${s.otherCpuPct.toFixed(0)}%, load ${loadavg()})`);
        runsBy[layout].push(result);
      }
    }
  } finally {
    etcd.proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
  load.end = loadavg();
  const summary = (results) => {
    const keys = ['rate', 'cpuUsPerMessage', 'sysUsPerMessage', 'idleUsPerMessage', 'clientUsPerMessage', 'etcdUsPerMessage', 'brokerCpuPct', 'clientCpuPct', 'otherCpuPct', 'framesToBrokersPerMessage', 'framesFromBrokersPerMessage', ...(results[0].commitsPerMessage !== undefined ? ['commitsPerMessage'] : [])];
    return Object.fromEntries(keys.map((k) => [k, spread(results.map((r) => r[k]))]));
  };
  const layouts = Object.fromEntries(only.map((l) => [l, {
    saturated: summary(runsBy[l].map((r) => r.saturated)),
    paced: runsBy[l][0].paced ? summary(runsBy[l].map((r) => r.paced)) : null,
    idleMsPerSecond: spread(runsBy[l].map((r) => r.idleMsPerSecond)),
    runs: runsBy[l],
  }]));
  /** b / a per run (the layouts of one run ran one after the other), medians and spreads */
  const ratio = (a, b, pass, key) => (runsBy[a] && runsBy[b] && runsBy[a][0][pass] ? spread(runsBy[a].map((r, i) => runsBy[b][i][pass][key] / r[pass][key])) : null);
  return {
    count,
    window,
    clients,
    warm,
    rate,
    load,
    layouts,
    routing: { saturated: ratio('none', 'one', 'saturated', 'cpuUsPerMessage'), paced: ratio('none', 'one', 'paced', 'cpuUsPerMessage') },
    twoSets: { rate: ratio('one', 'two', 'saturated', 'rate'), cpuSaturated: ratio('one', 'two', 'saturated', 'cpuUsPerMessage'), cpuPaced: ratio('one', 'two', 'paced', 'cpuUsPerMessage') },
    // kept for readers of latest.json before these fields
    routingCpuRatio: ratio('none', 'one', 'saturated', 'cpuUsPerMessage')?.median ?? null,
    twoSetsRateRatio: ratio('one', 'two', 'saturated', 'rate')?.median ?? null,
    twoSetsCpuRatio: ratio('one', 'two', 'saturated', 'cpuUsPerMessage')?.median ?? null,
  };
}

const LABELS = { none: 'election, no cluster block (1 broker)', one: 'cluster of 1 set (1 broker)', two: 'cluster of 2 sets (1 broker each)' };

export function printCluster(result) {
  const f = (s, digits = 1) => `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}-${s.max.toFixed(digits)})`;
  console.log(`\nCluster (issue 31): ${result.clients} producers, ${result.clients} consumers, 8 queues, ${result.count.toLocaleString('en-US')} durable messages measured per broker and pass after ${result.warm.toLocaleString('en-US')} per broker to warm it up; medians (min-max) of ${Object.values(result.layouts)[0].runs.length} runs; load average ${result.load.start} at the start, ${result.load.end} at the end`);
  for (const [pass, title] of [['saturated', 'saturated (as fast as the windows let the producers send)'], ['paced', `paced at ${result.rate.toLocaleString('en-US')} msg/s per broker`]]) {
    if (!Object.values(result.layouts)[0][pass]) continue;
    console.log(`  ${title}:`);
    for (const [l, x] of Object.entries(result.layouts)) {
      const p = x[pass];
      console.log(`    ${LABELS[l].padEnd(40)} ${f(p.rate, 0)} msg/s; broker CPU per message ${f(p.cpuUsPerMessage)} µs (system ${p.sysUsPerMessage.median.toFixed(1)}, idle share ${p.idleUsPerMessage.median.toFixed(2)}); clients ${p.clientUsPerMessage.median.toFixed(1)} µs, etcd ${p.etcdUsPerMessage.median.toFixed(2)} µs; frames to/from brokers per message ${p.framesToBrokersPerMessage.median.toFixed(3)}/${p.framesFromBrokersPerMessage.median.toFixed(3)}${p.commitsPerMessage ? `, store commits per message ${p.commitsPerMessage.median.toFixed(4)}` : ''}; brokers ${p.brokerCpuPct.median.toFixed(0)}%, clients ${p.clientCpuPct.median.toFixed(0)}%, other ${p.otherCpuPct.median.toFixed(0)}% of a core`);
    }
  }
  const r = (s) => (s ? f(s, 3) : 'n/a');
  console.log(`  routing cost, CPU per message 1 set / no cluster block (per run): saturated ${r(result.routing.saturated)}, paced ${r(result.routing.paced)}`);
  console.log(`  2 sets / 1 set (per run): msg/s x${r(result.twoSets.rate)}; broker CPU per message saturated x${r(result.twoSets.cpuSaturated)}, paced x${r(result.twoSets.cpuPaced)}`);
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
  const layouts = args.layouts ? args.layouts.split(',') : LAYOUTS;
  PROF_DIR = args['cpu-prof-dir'] ?? null;
  const result = await measureCluster({ runs: Number(args.runs ?? 3), count: Number(args.count ?? 40_000), window: Number(args.window ?? 2000), clients: Number(args.clients ?? 2), warm: Number(args.warm ?? 40_000), rate: Number(args.rate ?? 8_000), counters: 'counters' in args, layouts, log: (l) => console.log(l) });
  printCluster(result);
  if (args.json) writeFileSync(args.json, JSON.stringify(result, null, 2));
  process.exit(0);
}
