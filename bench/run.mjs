// `npm run bench`: measures each scenario, in the same invocation, against Whisker, against the
// reference system Kitten-MQ 0.12.3 (bench/reference/, installed in bench/node_modules only) and
// against a bare ws relay of the benchmark's own (bench/relay/), and against the production
// peers Redis Streams (appendfsync always; everysec, not durable) and NATS JetStream
// (bench/peers/; servers from the system's packages, clients in bench/node_modules), and prints
// the ratios.
// Every run starts fresh server processes and separate client processes on loopback; Whisker
// rows check that every message arrived exactly once (loss, duplicates and stalls exit 1).
// The table is printed and written to bench/results/ (latest.json for a full default run).
//
// The cluster row (bench/cluster.mjs, needs etcd on PATH): 1 set vs 2 sets, and the routing
// cost; in every run unless --skip=cluster, alone with --only=cluster.
//
// Options: --runs=N (default 3), --only=key[,key] (row keys, the groups "flow" and "rss", or "cluster"),
//          --with-rss (add the "rss" group, default off: about 4 minutes more),
//          --with-replay (add the "replay" group, default off: about 4 minutes more with NATS),
//          --skip=key[,key], --no-reference, --no-relay (leave those columns out),
//          --scale=F (multiply message counts), --rate=N (the latency rows' paced rate),
//          --cpu-prof (the master Whisker broker runs with node --cpu-prof; profiles land in
//          bench/results/prof/, read them with bench/profile-summary.mjs),
//          --broker-flags="--trace-gc ..." (extra node flags for Whisker brokers; their output is
//          kept in <run dir>/broker-N.log), --broker-config='{"maxItemsInQueue":1000}' (merged
//          into Whisker brokers' config), --keep (keep the temporary run directories),
//          --no-retry (do not run a disturbed run again), --window=N (unanswered sends a
//          producer keeps, default 2,000), --no-peers (no Redis, no NATS),
//          --systems=whisker,kitten,relay,redis,redis-everysec,nats (which columns run).
// Only a full default invocation writes latest.json; others write partial-<time>.json.
import { execFileSync, fork } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MAP, now } from './lib.mjs';
import { measureFormats } from './formats.mjs';
import { freePort, spawnServer, stopServer, waitForPort } from './servers.mjs';
import { clusterUnavailable, measureCluster, printCluster } from './cluster.mjs';
import { fillHistory } from './history-fill.mjs';
import { natsSystem, natsUnavailable } from './peers/nats.mjs';
import { redisSystem, redisUnavailable } from './peers/redis.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = dirname(here);
const resultsDir = join(here, 'results');
const CHANNEL = 'bench/v1/1';
const QUEUE = 'bench/v1';
// a loaded machine may need more: BENCH_RUN_TIMEOUT_S (a run with a drain gets twice this)
const RUN_TIMEOUT_MS = Number(process.env.BENCH_RUN_TIMEOUT_S ?? 180) * 1000;
const REPLAY_TIMEOUT_MS = 600_000;
const KITTEN_VERSION = '0.12.3';

const args = Object.fromEntries(
  process.argv.slice(2).map((a) => {
    const a2 = a.replace(/^--/, '');
    const eq = a2.indexOf('=');
    return eq < 0 ? [a2, true] : [a2.slice(0, eq), a2.slice(eq + 1)];
  }),
);
const RUNS = Number(args.runs ?? 3);
const SCALE = Number(args.scale ?? 1);
const ONLY = typeof args.only === 'string' ? args.only.split(',') : null;
const SKIP = typeof args.skip === 'string' ? args.skip.split(',') : [];
const CPU_PROF = Boolean(args['cpu-prof']);
const KEEP = Boolean(args.keep);
/** rss1m without its drain (the RSS after the fill alone, in a third of the time) */
const NO_DRAIN = Boolean(args['no-drain']);
const RETRY = !args['no-retry'];
const WITH_RSS = Boolean(args['with-rss']);
const WITH_REPLAY = Boolean(args['with-replay']);
const WITH_REFERENCE = !args['no-reference'] && (typeof args.systems !== 'string' || args.systems.includes('kitten'));
const WITH_RELAY = !args['no-relay'] && (typeof args.systems !== 'string' || args.systems.includes('relay'));
const WINDOW = Number(args.window ?? 2000); // unanswered sends a producer keeps at most
const PEER_KEYS = ['redis', 'redis-everysec', 'nats'];
const SYSTEMS = typeof args.systems === 'string' ? args.systems.split(',') : ['whisker', 'kitten', 'relay', ...(args['no-peers'] ? [] : PEER_KEYS)];
const RATE = args.rate ? Number(args.rate) : null; // overrides the latency rows' paced rate
const BROKER_CONFIG = typeof args['broker-config'] === 'string' ? JSON.parse(args['broker-config']) : {};
const BROKER_FLAGS = typeof args['broker-flags'] === 'string' ? args['broker-flags'].split(' ').filter(Boolean) : [];

// ---- scenarios ---------------------------------------------------------------------------
//
// A row runs `whisker` and, where they exist, `kitten` and `relay` targets of the same shape.
// Equal kitten or relay targets of several rows are run once and shared (their `key`).
// Relay targets carry more messages: 50,000 messages would last 50 ms on the batched relay.

const relayOf = (shape) => (shape.latency ? { b1: { ...shape, batch: 1 }, b50: null } : { b1: { ...shape, batch: 1, count: 200_000 }, b50: { ...shape, batch: 50, count: 1_000_000 } });
const RELAY_C1 = relayOf({ key: 'c1', receivers: 1, mode: 'consume' });
const RELAY_C4 = relayOf({ key: 'c4', receivers: 4, mode: 'consume' });
const RELAY_L4 = relayOf({ key: 'l4', receivers: 4, mode: 'listen' });
const RELAY_LAT = relayOf({ key: 'lat', receivers: 1, mode: 'consume', latency: true });
const K_P100 = { key: 'k-p100', prefetch: 100 };
// the peers' targets (Redis Streams, NATS JetStream): no map language, no mirrors, no idle row
const PEER_P100 = { key: 'p100', prefetch: 100 };

const ALL_SCENARIOS = [
  { key: 'p1', group: 'flow', label: '1 -> 1 consume, prefetch 1', unit: 'msg/s', receivers: 1, mode: 'consume', prefetch: 1, count: 30_000,
    kitten: { key: 'k-p1', prefetch: 1 }, relay: RELAY_C1, peer: { key: 'p1', prefetch: 1 } },
  { key: 'p100', group: 'flow', label: '1 -> 1 consume, prefetch 100 (durable store)', unit: 'msg/s', receivers: 1, mode: 'consume', prefetch: 100, count: 50_000,
    kitten: K_P100, relay: RELAY_C1, peer: PEER_P100 },
  { key: 'p100mem', group: 'flow', label: '1 -> 1 consume, prefetch 100, memory store', unit: 'msg/s', receivers: 1, mode: 'consume', prefetch: 100, count: 50_000, store: 'memory',
    kitten: K_P100, relay: RELAY_C1, peer: PEER_P100 },
  { key: 'compete4', group: 'flow', label: '1 -> 4 competing consumers, prefetch 100, one group (total)', unit: 'msg/s', receivers: 4, mode: 'consume', prefetch: 100, count: 50_000,
    kitten: { key: 'k-compete4', prefetch: 100 }, relay: RELAY_C4, peer: { key: 'compete4', prefetch: 100 } },
  { key: 'map', group: 'flow', label: '1 -> 1 consume, prefetch 100, 10-field map on the channel', unit: 'msg/s', receivers: 1, mode: 'consume', prefetch: 100, count: 50_000, map: true,
    kitten: { key: 'k-map', prefetch: 100, map: true }, relay: RELAY_C1 },
  { key: 'fanout4', group: 'flow', label: '1 -> 4 listeners (total deliveries)', unit: 'deliveries/s', receivers: 4, mode: 'listen', count: 50_000,
    kitten: { key: 'k-fanout4', prefetch: 100 }, relay: RELAY_L4, peer: { key: 'fanout4', prefetch: 100 } },
  { key: 'mirror2', group: 'flow', label: '1 -> 1 consume, prefetch 100, two mirror brokers', unit: 'msg/s', receivers: 1, mode: 'consume', prefetch: 100, count: 50_000, brokers: 2,
    kitten: { key: 'k-mirror2', prefetch: 100, brokers: 2 }, relay: RELAY_C1 },
  { key: 'mirror3', group: 'flow', label: '1 -> 1 consume, prefetch 100, three mirror brokers', unit: 'msg/s', receivers: 1, mode: 'consume', prefetch: 100, count: 50_000, brokers: 3,
    kitten: { key: 'k-mirror3', prefetch: 100, brokers: 3 }, relay: RELAY_C1 },
  { key: 'latency', group: 'flow', label: 'latency, 1,000 msg/s paced, prefetch 100 (after 500 warm-up), durable', unit: 'ms', receivers: 1, mode: 'consume', prefetch: 100, count: 5_500, warmup: 500, rate: 1000, latency: true,
    kitten: { key: 'k-latency', prefetch: 100 }, relay: RELAY_LAT, peer: { key: 'latency', prefetch: 100 } },
  { key: 'latencymem', group: 'flow', label: 'latency, 1,000 msg/s paced, prefetch 100, memory store', unit: 'ms', receivers: 1, mode: 'consume', prefetch: 100, count: 5_500, warmup: 500, rate: 1000, latency: true, store: 'memory',
    kitten: { key: 'k-latency', prefetch: 100 }, relay: RELAY_LAT, peer: { key: 'latency', prefetch: 100 } },
  { key: 'rss1m', group: 'rss', kind: 'waiting', label: 'broker RSS, 1,000,000 messages waiting (no subscriber), durable', unit: 'MB', count: 1_000_000, drain: true,
    kitten: { key: 'k-rss1m', kind: 'waiting' }, relay: null, peer: { key: 'rss1m', kind: 'waiting' } },
  { key: 'idle10k', group: 'rss', kind: 'idle', label: 'broker RSS, 10,000 idle authenticated connections', unit: 'MB', count: 10_000, processes: 4,
    kitten: { key: 'k-idle10k', kind: 'idle', processes: 4 }, relay: null },
  { key: 'replay', group: 'replay', kind: 'replay', label: 'replay of 1,000,000 retained messages to one client (msg/s; broker RSS before -> peak)', unit: 'msg/s', count: 1_000_000,
    relay: null, peer: { key: 'replay', kind: 'replay' } },
];
// the "rss" and "replay" groups take about 4 minutes more each: off by default, on with
// --with-rss / --with-replay or --only=rss / --only=replay
const optIn = { rss: WITH_RSS, replay: WITH_REPLAY };
const selected = (s) => (ONLY ? ONLY.includes(s.key) || ONLY.includes(s.group) : !(s.group in optIn) || optIn[s.group]) && !SKIP.includes(s.key) && !SKIP.includes(s.group);
const SCENARIOS = ALL_SCENARIOS.filter(selected);
const WITH_CLUSTER = (ONLY ? ONLY.includes('cluster') : true) && !SKIP.includes('cluster') && SYSTEMS.includes('whisker');

// ---- processes ---------------------------------------------------------------------------

/** a forked client process and the messages it reports, awaited by type */
class Child {
  constructor(script, name, config) {
    this.name = name;
    this.inbox = [];
    this.waiters = [];
    this.failure = null;
    this.stderr = '';
    this.proc = fork(join(here, script), [], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    this.proc.stderr.on('data', (d) => (this.stderr += d));
    this.proc.on('message', (m) => {
      if (m?.type === 'fatal') return this.#fail(new Error(`${name}: ${m.error}`));
      this.inbox.push(m);
      this.#drain();
    });
    this.proc.on('exit', (code, signal) => {
      this.exited = true;
      if (code !== 0) this.#fail(new Error(`${name} exited with ${code ?? signal}${this.stderr ? `: ${this.stderr.trim().slice(0, 500)}` : ''}`));
      else this.#drain();
    });
    this.proc.send(config);
  }

  next(type) {
    return new Promise((resolve, reject) => {
      this.waiters.push({ type, resolve, reject });
      this.#drain();
    });
  }

  send(message) {
    if (this.proc.connected) this.proc.send(message);
  }

  kill() {
    if (!this.exited) this.proc.kill('SIGKILL');
  }

  #fail(error) {
    this.failure ??= error;
    this.#drain();
  }

  #drain() {
    while (this.waiters.length > 0) {
      const waiter = this.waiters[0];
      const index = this.inbox.findIndex((m) => m.type === waiter.type);
      if (index >= 0) {
        this.waiters.shift();
        waiter.resolve(this.inbox.splice(index, 1)[0]);
      } else if (this.failure || this.exited) {
        this.waiters.shift();
        waiter.reject(this.failure ?? new Error(`${this.name} exited before reporting ${waiter.type}`));
      } else {
        return;
      }
    }
  }
}

/** machine-wide busy CPU time in ms, and steal time (Linux /proc/stat; null elsewhere) */
function systemCpu() {
  try {
    const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    return { busyMs: (user + nice + system + irq + softirq) * 10, stealMs: steal * 10 };
  } catch {
    return null;
  }
}

/** resident set size and its peak (VmHWM) of a process in MB (10^6 bytes; Linux /proc; null elsewhere) */
function memOf(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const mb = (name) => {
      const kb = new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1];
      return kb ? Math.round((Number(kb) * 1024) / 1e5) / 10 : null;
    };
    return { rss: mb('VmRSS'), hwm: mb('VmHWM') };
  } catch {
    return { rss: null, hwm: null };
  }
}

/** utime + stime of a process, in ms (Linux /proc; null elsewhere) */
function cpuMsOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // CLK_TCK is 100 on Linux
  } catch {
    return null;
  }
}

/** the soft limit on open files of this process (children inherit it), or null */
function openFilesLimit() {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
    return Number(line.split(/\s{2,}/)[1]);
  } catch {
    return null;
  }
}

function httpGet(port, path) {
  return new Promise((resolve, reject) => {
    const request = get({ host: '127.0.0.1', port, path, timeout: 10_000 }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (d) => (body += d));
      response.on('end', () => resolve(body));
    });
    request.on('error', reject);
    request.on('timeout', () => request.destroy(new Error(`GET ${path}: timeout`)));
  });
}

// ---- the systems -------------------------------------------------------------------------
//
// Each system starts its servers for a target (`start` -> { hosts/port, main, all, notes }) and
// names the scripts and configs of its client processes.

/**
 * what every receiver is told: competing consumers each see a share of the messages, so they
 * finish 1 s after the last delivery once the producer is done (the run checks the total)
 */
const receiving = (t) => ({ expected: t.count, latency: Boolean(t.latency), warmup: t.warmup ?? 0, ...(t.mode === 'consume' && t.receivers > 1 ? { idleMs: 1000 } : {}) });

const peersRefused = { reason: null }; // set once a Whisker broker refused `peers`

/** the production peers, each with why it cannot run here (null: it can) */
const PEERS = [
  { key: 'redis', label: 'Redis Streams, fsync always', system: redisSystem('always', { receiving, window: WINDOW }), unavailable: redisUnavailable },
  { key: 'redis-everysec', label: 'Redis Streams, everysec (not durable)', system: redisSystem('everysec', { receiving, window: WINDOW }), unavailable: redisUnavailable },
  { key: 'nats', label: 'NATS JetStream (no fsync)', system: natsSystem({ receiving, window: WINDOW }), unavailable: natsUnavailable },
].filter((p) => SYSTEMS.includes(p.key));

const whisker = {
  name: 'Whisker',
  async start(target, dir, runLabel) {
    const n = target.brokers ?? 1;
    const withPeers = n > 1 && !peersRefused.reason;
    try {
      return await this.startBrokers(target, dir, runLabel, withPeers);
    } catch (error) {
      if (!withPeers || !/peer/i.test(error.message)) throw error;
      peersRefused.reason = error.message.slice(0, 300);
      return this.startBrokers(target, dir, runLabel, false);
    }
  },
  async startBrokers(target, dir, runLabel, withPeers) {
    const n = target.brokers ?? 1;
    const ports = [];
    for (let i = 0; i < n; i++) ports.push(await freePort());
    const serviceId = (i) => (n === 1 ? 'whisker' : `whisker-${i + 1}`);
    const host = (i) => `127.0.0.1:${ports[i]}@${serviceId(i)}`;
    const managementPort = await freePort();
    const procs = [];
    try {
      for (let i = 0; i < n; i++) {
        const config = {
          serviceId: serviceId(i),
          isMaster: i === 0,
          dataDirectory: join(dir, `data-${i + 1}`),
          registeredClientsPath: join(dir, `clients-${i + 1}`),
          keysDirectory: join(dir, `broker-keys-${i + 1}`),
          socketServer: { host: '127.0.0.1', port: ports[i] },
          maxItemsInQueue: 2_000_000,
          logLevel: 'warn',
          ...(i === 0 ? { management: { host: '127.0.0.1', port: managementPort } } : {}),
          ...(withPeers ? { peers: ports.map((_, j) => j).filter((j) => j !== i).map(host) } : {}),
          ...(target.map ? { channels: { [QUEUE]: { map: MAP } } } : {}),
          ...(target.kind === 'replay' ? { channels: { [QUEUE]: { retention: { maxBytes: 4 * 1024 ** 3 } } } } : {}),
          ...(target.kind === 'idle' ? { limits: { maxConnections: target.count + 1000, maxUnauthenticatedPerAddress: 1000 } } : {}),
          ...BROKER_CONFIG,
        };
        const configPath = join(dir, `config-${i + 1}.json`);
        writeFileSync(configPath, JSON.stringify(config, null, 2));
        if (target.kind === 'replay') cpSync(await replayHistory(target.count), join(config.dataDirectory, 'history'), { recursive: true });
        const profile = CPU_PROF && i === 0 ? ['--cpu-prof', `--cpu-prof-dir=${join(resultsDir, 'prof')}`, `--cpu-prof-name=broker-${runLabel}-${Date.now()}.cpuprofile`] : [];
        const entry = target.store === 'memory' ? [join(here, 'memory-broker.mjs'), configPath] : [join(root, 'bin', 'whisker'), 'start', '-c', configPath];
        procs.push(spawnServer([...profile, ...BROKER_FLAGS, ...entry], root));
      }
      for (let i = 0; i < n; i++) await waitForPort(ports[i], procs[i], 10_000, `Whisker broker ${serviceId(i)}`);
    } catch (error) {
      await Promise.all(procs.map(stopServer));
      throw error;
    }
    const notes = [];
    if (n > 1) notes.push(withPeers ? 'peers configured' : `peers left out${peersRefused.reason ? ` (refused: ${peersRefused.reason})` : ''}`);
    return { hosts: ports.map((_, i) => host(i)), main: procs[0], all: procs, managementPort, notes, durable: target.store !== 'memory' };
  },
  receiver: (t, s, i, clientId, dir) => ['consumer.mjs', { hosts: s.hosts, clientId, keysDirectory: join(dir, `keys-${clientId}`), channel: CHANNEL, mode: t.mode, prefetch: t.prefetch, ...receiving(t) }],
  producer: (t, s, dir) => ['producer.mjs', { hosts: s.hosts, clientId: 'bench-producer', keysDirectory: join(dir, 'keys-bench-producer'), channel: CHANNEL, count: t.count, window: WINDOW, rate: t.rate ?? 0, shape: t.map ? 'map' : 'plain' }],
  replayer: (t, s, dir) => ['replayer.mjs', { hosts: s.hosts, clientId: 'bench-replayer', keysDirectory: join(dir, 'keys-bench-replayer'), channel: CHANNEL, ...receiving(t) }],
  /** the history is in place before the broker starts (history-fill.mjs): nothing to send */
  filledAtStart: true,
  idle: (t, s, p, n, dir) => ['idle-clients.mjs', { system: 'whisker', hosts: s.hosts, clientId: `bench-idle-${p + 1}`, keysDirectory: join(dir, `keys-idle-${p + 1}`), count: n }],
  /** checks of the broker's own view: the depth after the waiting run, the connections after the idle one */
  async check(t, s) {
    if (t.kind === 'waiting') {
      const queues = JSON.parse(await httpGet(s.managementPort, '/api/queues')).queues;
      const q = queues.find((x) => x.name === QUEUE);
      return { depth: q?.depth ?? 0, dropped: q?.counters?.dropped ?? 0, problems: q?.depth === t.count ? [] : [`queue depth ${q?.depth} after ${t.count} sends (dropped ${q?.counters?.dropped})`] };
    }
    if (t.kind === 'idle') {
      const metrics = await httpGet(s.managementPort, '/metrics');
      const connections = Number(/^whisker_connections\s+(\d+)/m.exec(metrics)?.[1]);
      return { connections, problems: connections >= t.count ? [] : [`the broker counts ${connections} connections, expected ${t.count}`] };
    }
    return { problems: [] };
  },
};

/** the replay row's history, written once per invocation (history-fill.mjs) and copied into each run */
let replayHistoryDir = null;
async function replayHistory(count) {
  if (replayHistoryDir?.count === count) return replayHistoryDir.path;
  if (replayHistoryDir) rmSync(replayHistoryDir.path, { recursive: true, force: true });
  const base = mkdtempSync(join(tmpdir(), 'whisker-bench-history-'));
  process.on('exit', () => rmSync(base, { recursive: true, force: true }));
  await fillHistory(base, QUEUE, CHANNEL.split('/')[2], count);
  replayHistoryDir = { count, path: join(base, 'history') };
  return replayHistoryDir.path;
}

const kitten = {
  name: 'Kitten-MQ',
  async start(target, dir) {
    const n = target.brokers ?? 1;
    const ports = [];
    for (let i = 0; i < n; i++) ports.push(await freePort());
    const serviceId = (i) => `kitten-${i + 1}`;
    const procs = [];
    try {
      for (let i = 0; i < n; i++) {
        const base = join(dir, `kitten-${i + 1}`);
        mkdirSync(base, { recursive: true });
        const config = {
          serviceId: serviceId(i),
          isMaster: i === 0,
          registeredClientsPath: join(base, 'clients'),
          keysDirectory: join(base, 'keys'),
          keysName: 'broker',
          logsDirectory: join(base, 'logs'),
          socketServer: { host: '127.0.0.1', port: ports[i], logs: join(base, 'packets'), packetsFilename: 'broker.log', token: null },
          maxItemsInQueue: 2_000_000,
          requeueLimit: 5,
          requeueInterval: 100,
          isManagementInterface: false, // its HTTP server would listen on 8080 in every run
          logLevel: 3, // warn: at its default (info) it logs a line per packet
          channels: { [QUEUE]: { prefetch: target.prefetch ?? 1, ...(target.map ? { map: MAP } : {}) } },
        };
        const configPath = join(base, 'config.json');
        writeFileSync(configPath, JSON.stringify(config, null, 2));
        procs.push(spawnServer([join(here, 'reference', 'broker.mjs'), configPath], base));
      }
      for (let i = 0; i < n; i++) await waitForPort(ports[i], procs[i], 15_000, `Kitten-MQ broker ${serviceId(i)}`);
    } catch (error) {
      await Promise.all(procs.map(stopServer));
      throw error;
    }
    return { hosts: ports.map((p, i) => `127.0.0.1:${p}@${serviceId(i)}`), main: procs[0], all: procs, notes: [] };
  },
  receiver: (t, s, i, clientId, dir) => ['reference/consumer.mjs', { hosts: s.hosts, clientId, keysDirectory: join(dir, `keys-${clientId}`), channel: CHANNEL, mode: t.mode, ...receiving(t) }],
  producer: (t, s, dir) => ['reference/producer.mjs', { hosts: s.hosts, clientId: 'bench-producer', keysDirectory: join(dir, 'keys-bench-producer'), channel: CHANNEL, count: t.count, window: WINDOW, rate: t.rate ?? 0, shape: t.map ? 'map' : 'plain' }],
  idle: (t, s, p, n, dir) => ['idle-clients.mjs', { system: 'kitten', hosts: s.hosts, clientId: `bench-idle-${p + 1}`, keysDirectory: join(dir, `keys-idle-${p + 1}`), count: n }],
  check: async () => ({ problems: [] }),
};

const relay = {
  name: 'ws relay',
  async start(target) {
    const port = await freePort();
    const proc = spawnServer([join(here, 'relay', 'server.mjs'), String(port)], here);
    try {
      await waitForPort(port, proc, 10_000, 'relay');
    } catch (error) {
      await stopServer(proc);
      throw error;
    }
    return { port, main: proc, all: [proc], notes: [`${target.batch} message(s) a frame`] };
  },
  receiver: (t, s, i, clientId) => ['relay/consumer.mjs', { port: s.port, clientId, mode: t.mode, ...receiving(t) }],
  producer: (t, s) => ['relay/producer.mjs', { port: s.port, batch: t.batch, count: t.count, window: WINDOW, rate: t.rate ?? 0 }],
  check: async () => ({ problems: [] }),
};

// ---- one run -----------------------------------------------------------------------------

async function runOnce(system, target, runLabel) {
  const dir = mkdtempSync(join(tmpdir(), `whisker-bench-${runLabel}-`));
  const children = [];
  let servers = null;
  let result;
  let timer;
  try {
    servers = await system.start(target, dir, runLabel);
    const runs = { waiting: waitingRun, idle: idleRun, replay: replayRun };
    const work = (runs[target.kind] ?? flowRun)(system, target, servers, dir, children);
    const timeout = new Promise((_, reject) => {
      // a replay run fills a million first; a waiting run with a drain sends, then drains
      const limit = target.kind === 'replay' ? REPLAY_TIMEOUT_MS : target.drain && system === whisker ? 2 * RUN_TIMEOUT_MS : RUN_TIMEOUT_MS;
      timer = setTimeout(() => reject(new Error(`run did not finish within ${limit / 1000} s (stall)`)), limit);
    });
    result = await Promise.race([work, timeout]);
  } catch (error) {
    result = { count: target.count, failed: error.message.split('\n')[0].slice(0, 300), problems: [error.message.slice(0, 500)] };
  } finally {
    clearTimeout(timer);
    for (const c of children) c.kill();
    if (servers) {
      const exits = await Promise.all(servers.all.map(stopServer));
      result.notes = servers.notes;
      result.serverExits = exits;
      exits.forEach((exit, i) => {
        if (exit.code !== 0 && system === whisker) result.problems = [...(result.problems ?? []), `broker ${i + 1} exit ${exit.code ?? exit.signal}${exit.forced ? ' (SIGKILL after 10 s: SIGTERM did not stop it)' : ''}`];
      });
      if (system === whisker) result.durableStore = existsSync(join(dir, 'data-1', 'store'));
      servers.all.forEach((p, i) => writeFileSync(join(dir, `server-${i + 1}.log`), p.output));
      const logLines = system !== whisker || BROKER_FLAGS.length > 0 ? [] : servers.all.flatMap((p) => p.output.split('\n').filter((l) => l.trim() && !/^whisker: SIG(TERM|INT)\b/.test(l)));
      if (logLines.length > 0) result.brokerLog = logLines.slice(0, 20);
    }
    if (!KEEP) rmSync(dir, { recursive: true, force: true });
  }
  return result;
}

/** start the receivers; those sharing a client name after the first (their key pair is created once) */
async function startReceivers(system, target, servers, dir, children) {
  const receivers = [];
  for (let i = 0; i < target.receivers; i++) {
    const clientId = target.mode === 'listen' ? `bench-listener-${i + 1}` : 'bench-consumer';
    const [script, config] = system.receiver(target, servers, i, clientId, dir);
    const child = new Child(script, clientId, config);
    children.push(child);
    receivers.push(child);
    if (i === 0 && target.mode !== 'listen' && target.receivers > 1) await child.next('ready').then((m) => (child.readyMessage = m));
  }
  await Promise.all(receivers.filter((r) => !r.readyMessage).map((r) => r.next('ready')));
  return receivers;
}

async function flowRun(system, target, servers, dir, children) {
  const broker = servers.main;
  const receivers = await startReceivers(system, target, servers, dir, children);
  const [script, config] = system.producer(target, servers, dir);
  const producer = new Child(script, 'bench-producer', config);
  children.push(producer);
  await producer.next('ready');
  if (system === whisker) await brokerPauseMs(servers); // starts the broker's pause interval
  const cpu0 = servers.all.map((p) => cpuMsOf(p.pid));
  const system0 = systemCpu();
  const sent = await producer.next('done');
  for (const r of receivers) r.send({ type: 'producerDone' });
  const received = await Promise.all(receivers.map((r) => r.next('done')));
  const cpu1 = servers.all.map((p) => cpuMsOf(p.pid));
  sent.brokerRssMB = memOf(broker.pid).rss;
  const system1 = systemCpu();
  if (system0 && system1) sent.system = { busyMs: system1.busyMs - system0.busyMs, stealMs: system1.stealMs - system0.stealMs };
  const serversCpuMs = cpu0.every((x) => x !== null) && cpu1.every((x) => x !== null) ? cpu1.map((x, i) => x - cpu0[i]) : null;
  const run = summariseRun(target, sent, received, serversCpuMs);
  if (system === whisker) run.brokerPauseMs = await brokerPauseMs(servers);
  run.problems.push(...(await system.check(target, servers)).problems);
  return run;
}

/** the master broker's longest event-loop pause since the previous scrape, in ms */
async function brokerPauseMs(servers) {
  const metrics = await httpGet(servers.managementPort, '/metrics');
  return 1000 * Number(/^whisker_event_loop_delay_max_seconds\s+(\S+)/m.exec(metrics)?.[1] ?? NaN);
}

/** `count` messages sent to a channel nobody subscribes to: how long, and the broker's memory after */
async function waitingRun(system, target, servers, dir, children) {
  const broker = servers.main;
  const mem0 = memOf(broker.pid);
  const [script, config] = system.producer(target, servers, dir);
  const producer = new Child(script, 'bench-producer', config);
  children.push(producer);
  await producer.next('ready');
  const cpu0 = cpuMsOf(broker.pid);
  const sent = await producer.next('done');
  const cpu1 = cpuMsOf(broker.pid);
  await new Promise((r) => setTimeout(r, 500)); // the last writes settle
  const mem = memOf(broker.pid);
  if (process.env.MEMPROBE_FILE) broker.kill('SIGWINCH'); // bench/mem-probe.cjs, when preloaded: its picture at this reading
  const seconds = (sent.end - sent.start) / 1000;
  const problems = [];
  const sendErrors = Object.entries(sent.errors);
  if (sendErrors.length > 0) problems.push(`send errors ${sendErrors.map(([k, v]) => `${k}x${v}`).join(' ')} (first: ${sent.firstErrorMessage})`);
  const check = await system.check(target, servers);
  problems.push(...check.problems);
  const drain = system === whisker && target.drain && !NO_DRAIN ? await drainRun(system, target, servers, dir, children, problems) : null;
  return {
    drain,
    count: target.count,
    value: mem.rss,
    rssMB: mem.rss,
    hwmMB: mem.hwm,
    rssBeforeMB: mem0.rss,
    seconds,
    rate: target.count / seconds,
    cpu: { brokerPct: cpu0 !== null && cpu1 !== null ? (100 * (cpu1 - cpu0)) / (seconds * 1000) : null, producerPct: (100 * sent.cpuMs) / (seconds * 1000) },
    depth: check.depth,
    problems,
  };
}

/**
 * After a waiting run: one consumer (prefetch 100) takes every waiting message; how fast, and the
 * broker's longest event-loop pause meanwhile (whisker_event_loop_delay_max_seconds, reset by the
 * scrape just before the consumer starts).
 */
async function drainRun(system, target, servers, dir, children, problems) {
  const t = { ...target, mode: 'consume', prefetch: 100, receivers: 1 };
  await brokerPauseMs(servers);
  const cpu0 = cpuMsOf(servers.main.pid);
  const [script, config] = system.receiver(t, servers, 0, 'bench-consumer', dir);
  const consumer = new Child(script, 'bench-consumer', config);
  children.push(consumer);
  await consumer.next('ready');
  consumer.send({ type: 'producerDone' }); // nothing more comes: done once all arrived or idle 5 s
  const received = await consumer.next('done');
  const cpu1 = cpuMsOf(servers.main.pid);
  const pauseMs = await brokerPauseMs(servers);
  const mem = memOf(servers.main.pid);
  const seconds = (received.last - received.first) / 1000;
  const run = summariseRun(t, { errors: {}, start: received.first }, [received], null);
  problems.push(...run.problems.map((p) => `drain: ${p}`));
  return { delivered: received.distinct, seconds, rate: received.distinct / Math.max(seconds, 1e-3), pauseMs, rssAfterMB: mem.rss, hwmAfterMB: mem.hwm, brokerPct: cpu0 !== null && cpu1 !== null ? (100 * (cpu1 - cpu0)) / (seconds * 1000) : null };
}

/**
 * A retained history of `count` messages replayed to one client: the filling (Whisker: files
 * written before the broker starts; a peer: its producer) is not timed; the rate runs from the
 * replay's request to the last message; the server's RSS is sampled every 100 ms meanwhile.
 */
async function replayRun(system, target, servers, dir, children) {
  const broker = servers.main;
  const problems = [];
  let fillSeconds = null;
  if (!system.filledAtStart) {
    const [script, config] = (system.filler ?? system.producer)(target, servers, dir);
    const producer = new Child(script, 'bench-producer', config);
    children.push(producer);
    await producer.next('ready');
    const sent = await producer.next('done');
    fillSeconds = (sent.end - sent.start) / 1000;
    const sendErrors = Object.entries(sent.errors);
    if (sendErrors.length > 0) problems.push(`fill: send errors ${sendErrors.map(([k, v]) => `${k}x${v}`).join(' ')} (first: ${sent.firstErrorMessage})`);
  }
  const [script, config] = system.replayer(target, servers, dir);
  const replayer = new Child(script, 'bench-replayer', config);
  children.push(replayer);
  await replayer.next('ready');
  await new Promise((r) => setTimeout(r, 1000)); // the filling's last writes and collections settle
  const mem0 = memOf(broker.pid);
  let peak = mem0.rss ?? 0;
  const sampler = setInterval(() => (peak = Math.max(peak, memOf(broker.pid).rss ?? 0)), 100);
  const cpu0 = cpuMsOf(broker.pid);
  const system0 = systemCpu();
  const start = now();
  replayer.send({ type: 'start' });
  replayer.send({ type: 'producerDone' }); // a replay that stalls: 5 s without a message ends it
  const received = await replayer.next('done');
  clearInterval(sampler);
  const cpu1 = cpuMsOf(broker.pid);
  const system1 = systemCpu();
  const mem = memOf(broker.pid);
  peak = Math.max(peak, mem.rss ?? 0);
  if (system === whisker) {
    const end = replayer.inbox.find((m) => m.type === 'replayEnd');
    if (end?.error) problems.push(`replay ended with ${end.error}`);
    else if (end && end.count !== target.count) problems.push(`replay ended with count ${end.count}, expected ${target.count}`);
  }
  if (received.lost > 0) problems.push(`LOST ${received.lost}/${target.count} (first missing seq ${received.missing.join(',')})`);
  if (received.duplicates > 0) problems.push(`DUPLICATES ${received.duplicates}`);
  if (received.foreign > 0) problems.push(`${received.foreign} unexpected messages`);
  if (received.clientErrors.length > 0) problems.push(`client errors: ${received.clientErrors.join('; ')}`);
  const seconds = (Math.max(received.last, start + 1) - start) / 1000;
  const run = {
    count: target.count,
    seconds,
    rate: received.distinct / seconds,
    delivered: received.distinct,
    fillSeconds,
    rssBeforeMB: mem0.rss,
    rssPeakMB: peak,
    rssAfterMB: mem.rss,
    rssGrowthMB: mem0.rss !== null ? peak - mem0.rss : null,
    cpu: { brokerPct: cpu0 !== null && cpu1 !== null ? (100 * (cpu1 - cpu0)) / (seconds * 1000) : null, receiversPct: [(100 * received.cpuMs) / (seconds * 1000)] },
    firstDeliveryAfterMs: received.first - start,
    deliveriesPerFrame: [Math.round((10 * received.deliveries) / Math.max(1, received.batches)) / 10],
    problems,
  };
  if (system0 && system1) {
    const own = (cpu1 - cpu0) + received.cpuMs;
    run.cpu.otherPct = Math.max(0, (100 * (system1.busyMs - system0.busyMs - own)) / (seconds * 1000));
    if (run.cpu.otherPct > 25) run.warnings = [`other processes used ${Math.round(run.cpu.otherPct)}% of a core during the run: figures are disturbed`];
  }
  return run;
}

/** `count` connections that authenticate and stay idle, spread over `processes` client processes */
async function idleRun(system, target, servers, dir, children) {
  const limit = openFilesLimit();
  if (limit !== null && limit < target.count + 500) throw new Error(`ulimit -n is ${limit}: the broker needs about ${target.count + 500} open files (raise it with ulimit -n before npm run bench)`);
  const broker = servers.main;
  const mem0 = memOf(broker.pid);
  const processes = target.processes ?? 4;
  const started = now();
  const clients = [];
  for (let p = 0; p < processes; p++) {
    const n = Math.floor(target.count / processes) + (p < target.count % processes ? 1 : 0);
    const [script, config] = system.idle(target, servers, p, n, dir);
    const child = new Child(script, `idle-${p + 1}`, config);
    children.push(child);
    clients.push(child);
  }
  const ready = await Promise.all(clients.map((c) => c.next('ready')));
  const seconds = (now() - started) / 1000;
  await new Promise((r) => setTimeout(r, 2000)); // idle: let timers and GC settle
  const mem = memOf(broker.pid);
  const connected = ready.reduce((n, r) => n + r.connected, 0);
  const problems = [];
  if (connected < target.count) problems.push(`${connected}/${target.count} connected (first error: ${ready.find((r) => r.firstError)?.firstError})`);
  const check = await system.check(target, servers);
  problems.push(...check.problems);
  for (const c of clients) c.send({ type: 'close' });
  return {
    count: target.count,
    value: mem.rss,
    rssMB: mem.rss,
    hwmMB: mem.hwm,
    rssBeforeMB: mem0.rss,
    seconds,
    rate: connected / seconds,
    perConnectionKB: mem.rss !== null && mem0.rss !== null ? Math.round(((mem.rss - mem0.rss) * 1e6) / 1024 / Math.max(1, connected)) : null,
    connections: check.connections,
    problems,
  };
}

function summariseRun(target, sent, received, serversCpuMs) {
  const problems = [];
  const sendErrors = Object.entries(sent.errors);
  if (sendErrors.length > 0) problems.push(`send errors ${sendErrors.map(([k, v]) => `${k}x${v}`).join(' ')} (first: ${sent.firstErrorMessage})`);
  for (const r of received) {
    const who = received.length > 1 ? `${r.clientId}: ` : '';
    if (r.lost > 0) problems.push(`${who}LOST ${r.lost}/${target.count} (first missing seq ${r.missing.join(',')})`);
    if (r.duplicates > 0) problems.push(`${who}DUPLICATES ${r.duplicates}`);
    if (r.redelivered > 0) problems.push(`${who}${r.redelivered} redeliveries (nbRequeues > 0)`);
    if (r.foreign > 0) problems.push(`${who}${r.foreign} unexpected messages`);
    if (r.handlerErrors > 0) problems.push(`${who}${r.handlerErrors} handler errors (first: ${r.firstHandlerError})`);
    if (r.clientErrors.length > 0) problems.push(`${who}client errors: ${r.clientErrors.join('; ')}`);
  }
  // competing consumers share the stream: together they must see every message once
  let lostTotal = 0;
  if (target.mode === 'consume' && received.length > 1) {
    problems.length = 0;
    if (sendErrors.length > 0) problems.push(`send errors ${sendErrors.map(([k, v]) => `${k}x${v}`).join(' ')} (first: ${sent.firstErrorMessage})`);
    const distinct = received.reduce((n, r) => n + r.distinct, 0);
    const duplicates = received.reduce((n, r) => n + r.duplicates, 0);
    lostTotal = target.count - distinct;
    if (distinct < target.count) problems.push(`LOST ${target.count - distinct}/${target.count} (or delivered twice to different consumers)`);
    if (distinct > target.count) problems.push(`DUPLICATES ${distinct - target.count} across consumers`);
    if (duplicates > 0) problems.push(`DUPLICATES ${duplicates} within a consumer`);
    for (const r of received) {
      if (r.redelivered > 0) problems.push(`${r.clientId}: ${r.redelivered} redeliveries (nbRequeues > 0)`);
      if (r.foreign > 0) problems.push(`${r.clientId}: ${r.foreign} unexpected messages`);
      if (r.handlerErrors > 0) problems.push(`${r.clientId}: ${r.handlerErrors} handler errors (first: ${r.firstHandlerError})`);
      if (r.clientErrors.length > 0) problems.push(`${r.clientId}: client errors: ${r.clientErrors.join('; ')}`);
    }
  } else {
    for (const r of received) if (r.stalled) problems.push(`${received.length > 1 ? `${r.clientId}: ` : ''}stalled: ${r.distinct}/${target.count} after 5 s idle`);
  }
  const end = Math.max(...received.filter((r) => r.last > 0).map((r) => r.last), sent.start + 1);
  const seconds = (end - sent.start) / 1000;
  const delivered = received.reduce((n, r) => n + r.distinct, 0);
  const brokerCpuMs = serversCpuMs ? serversCpuMs.reduce((a, b) => a + b, 0) : null;
  const run = {
    count: target.count,
    seconds,
    rate: delivered / seconds,
    delivered,
    lostTotal,
    sendAckRate: sent.answered / ((sent.end - sent.start) / 1000),
    cpu: {
      brokerPct: brokerCpuMs !== null ? (100 * brokerCpuMs) / (seconds * 1000) : null,
      brokersPct: serversCpuMs ? serversCpuMs.map((x) => (100 * x) / (seconds * 1000)) : null,
      producerPct: (100 * sent.cpuMs) / (seconds * 1000),
      receiversPct: received.map((r) => (100 * r.cpuMs) / (seconds * 1000)),
    },
    producerSeconds: (sent.end - sent.start) / 1000,
    rssMB: { broker: sent.brokerRssMB, producer: sent.rssMB, receivers: received.map((r) => r.rssMB) },
    receiverHeapUsedMB: received.map((r) => r.heapUsedMB),
    deliveredPerReceiver: received.map((r) => r.distinct),
    firstDeliveryAfterMs: Math.min(...received.map((r) => r.first)) - sent.start,
    milestonesMs: received.map((r) => r.milestones),
    deliveriesPerFrame: received.map((r) => Math.round((10 * r.deliveries) / Math.max(1, r.batches)) / 10),
    pauses: { producer: sent.pauses, receivers: received.map((r) => r.pauses) },
    problems,
  };
  if (sent.system && brokerCpuMs !== null) {
    // CPU used on the machine during the run by anything but the benchmark's own processes
    // (window: producer connected .. receivers done; roughly the measured window)
    const own = brokerCpuMs + sent.cpuMs + received.reduce((n, r) => n + r.cpuMs, 0);
    run.cpu.otherPct = Math.max(0, (100 * (sent.system.busyMs - own)) / (seconds * 1000));
    run.cpu.stealPct = (100 * sent.system.stealMs) / (seconds * 1000);
    if (run.cpu.otherPct > 25) run.warnings = [`other processes used ${Math.round(run.cpu.otherPct)}% of a core during the run: figures are disturbed`];
  }
  if (target.latency) run.latency = received[0].latency;
  return run;
}

// ---- rows --------------------------------------------------------------------------------

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const stat = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
const int = (x) => Math.round(x).toLocaleString('en-US');
const ms = (x) => (x < 10 ? x.toFixed(2) : x.toFixed(1));
const mb = (x) => (x === null || x === undefined ? '-' : Math.round(x).toLocaleString('en-US'));
const spread = (xs, fmt) => `${fmt(Math.min(...xs))} - ${fmt(Math.max(...xs))}`;
const pct = (x) => (x === null || x === undefined ? '-' : `${Math.round(x)}%`);

function aggregate(target, runs) {
  const ok = runs.filter((r) => !r.failed);
  const agg = { count: target.count, runs };
  agg.problems = runs.flatMap((r, i) => (r.problems ?? []).map((p) => `run ${i + 1}: ${p}`));
  agg.warnings = runs.flatMap((r, i) => (r.warnings ?? []).map((p) => `run ${i + 1}: ${p}`));
  agg.notes = [...new Set(runs.flatMap((r) => r.notes ?? []))];
  if (ok.length === 0) {
    agg.failed = runs[0]?.failed ?? 'no run';
    return agg;
  }
  if (target.latency) {
    for (const q of ['p50', 'p99', 'max']) {
      agg[q] = stat(ok.map((r) => r.latency[q]));
      agg.includingWarmup ??= {};
      agg.includingWarmup[q] = stat(ok.map((r) => r.latency.includingWarmup[q]));
    }
    agg.value = agg.p99; // the figure a ratio compares: p99
  } else if (target.kind === 'replay') {
    agg.rate = stat(ok.map((r) => r.rate));
    agg.value = agg.rate;
    agg.seconds = stat(ok.map((r) => r.seconds));
    for (const k of ['rssBeforeMB', 'rssPeakMB', 'rssGrowthMB']) agg[k] = stat(ok.map((r) => r[k] ?? 0));
    if (ok.some((r) => r.fillSeconds !== null)) agg.fillSeconds = stat(ok.map((r) => r.fillSeconds ?? 0));
    agg.cpu = { brokerPct: median(ok.map((r) => r.cpu?.brokerPct ?? 0)), receiversPct: median(ok.map((r) => r.cpu.receiversPct[0])), otherPct: median(ok.map((r) => r.cpu.otherPct ?? 0)) };
    agg.deliveriesPerFrame = median(ok.map((r) => r.deliveriesPerFrame[0]));
    return agg;
  } else if (target.kind) {
    agg.value = stat(ok.map((r) => r.rssMB ?? 0));
    agg.hwm = stat(ok.map((r) => r.hwmMB ?? 0));
    agg.seconds = stat(ok.map((r) => r.seconds));
    agg.rate = stat(ok.map((r) => r.rate));
    agg.rssBefore = stat(ok.map((r) => r.rssBeforeMB ?? 0));
    if (ok.every((r) => r.drain)) agg.drain = { rate: stat(ok.map((r) => r.drain.rate)), pauseMs: stat(ok.map((r) => r.drain.pauseMs)), hwmMB: stat(ok.map((r) => r.drain.hwmAfterMB)), brokerPct: median(ok.map((r) => r.drain.brokerPct ?? 0)) };
  } else {
    agg.rate = stat(ok.map((r) => r.rate));
    agg.value = agg.rate;
  }
  if (!target.kind) {
    agg.cpu = {
      brokerPct: median(ok.map((r) => r.cpu.brokerPct ?? 0)),
      producerPct: median(ok.map((r) => r.cpu.producerPct)),
      receiversPct: median(ok.map((r) => r.cpu.receiversPct.reduce((a, b) => a + b, 0))),
      otherPct: median(ok.map((r) => r.cpu.otherPct ?? 0)),
    };
    agg.deliveriesPerFrame = median(ok.map((r) => median(r.deliveriesPerFrame)));
    agg.brokerRssMB = median(ok.map((r) => r.rssMB.broker ?? 0));
    if (ok.every((r) => Number.isFinite(r.brokerPauseMs))) agg.brokerPauseMs = stat(ok.map((r) => r.brokerPauseMs));
  } else {
    agg.cpu = { brokerPct: median(ok.map((r) => r.cpu?.brokerPct ?? 0)) };
  }
  return agg;
}

/** runs one target RUNS times, a disturbed run again (twice at most) */
async function measure(system, target, label) {
  const runs = [];
  for (let i = 0; i < RUNS; i++) {
    let run;
    for (let attempt = 0; ; attempt++) {
      const t0 = now();
      run = await runOnce(system, target, `${label}-${i + 1}`);
      const what = run.failed
        ? `FAILED: ${run.failed}`
        : target.latency
          ? `p50 ${ms(run.latency.p50)} ms, p99 ${ms(run.latency.p99)} ms, max ${ms(run.latency.max)} ms`
          : target.kind === 'replay'
            ? `${int(run.rate)} msg/s, ${run.seconds.toFixed(1)} s, RSS ${mb(run.rssBeforeMB)} -> peak ${mb(run.rssPeakMB)} MB (+${mb(run.rssGrowthMB)})${run.fillSeconds ? `, filled in ${run.fillSeconds.toFixed(1)} s` : ''}`
            : target.kind
            ? `RSS ${mb(run.rssMB)} MB (peak ${mb(run.hwmMB)} MB), ${run.seconds.toFixed(1)} s, ${int(run.rate)} ${target.kind === 'idle' ? 'connections' : 'msg'}/s${run.drain ? `; drained ${int(run.drain.delivered)} at ${int(run.drain.rate)} msg/s, broker longest pause ${ms(run.drain.pauseMs)} ms, RSS peak by its end ${mb(run.drain.hwmAfterMB)} MB` : ''}`
            : `${int(run.rate)} ${target.unit}`;
      const disturbed = run.warnings?.length > 0;
      process.stderr.write(`  ${label} run ${i + 1}/${RUNS}: ${what}${run.problems?.length ? ` [${run.problems.length} problem(s): ${run.problems[0].slice(0, 160)}]` : ''}${disturbed ? ' [disturbed]' : ''} (${((now() - t0) / 1000).toFixed(1)} s)\n`);
      if (!disturbed || !RETRY || attempt >= 2) break;
      process.stderr.write(`  ${label} run ${i + 1}: again, the machine was busy\n`);
    }
    runs.push(run);
    if (run.failed && system !== whisker) break; // a reference that cannot run: once is enough
  }
  return aggregate(target, runs);
}

// ---- the reference: installed in bench/node_modules, never in the product --------------------

function prepareReference() {
  if (!WITH_REFERENCE) return 'left out (--no-reference)';
  const installed = () => {
    try {
      return JSON.parse(readFileSync(join(here, 'node_modules', 'kitten-mq', 'package.json'), 'utf8')).version === KITTEN_VERSION;
    } catch {
      return false;
    }
  };
  if (!installed()) {
    console.log(`The reference (kitten-mq ${KITTEN_VERSION}) is not installed in bench/node_modules: npm ci --prefix bench ...`);
    try {
      execFileSync('npm', ['ci', '--prefix', here, '--no-audit', '--no-fund'], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'], timeout: 300_000 });
    } catch (error) {
      const stderr = String(error.stderr ?? error.message).trim().split('\n').filter((l) => /ERR|error/i.test(l)).slice(0, 2).join(' / ');
      return `npm ci --prefix bench failed: ${stderr.slice(0, 200) || error.message.slice(0, 200)}`;
    }
    if (!installed()) return `npm ci --prefix bench did not install kitten-mq ${KITTEN_VERSION}`;
  }
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
  } catch {
    return 'no openssl command: Kitten-MQ creates its key pairs with it';
  }
  return null;
}

// ---- table -------------------------------------------------------------------------------

function cell(target, agg, { withSpread = true } = {}) {
  if (!agg) return '-';
  if (agg.na) return `n/a (${agg.na})`;
  if (agg.failed) return `FAILED (${agg.failed.slice(0, 80)})`;
  if (target.latency) return `p50 ${ms(agg.p50.median)} / p99 ${ms(agg.p99.median)} ms${withSpread ? ` (p99 ${spread([agg.p99.min, agg.p99.max], ms)})` : ''}`;
  if (target.kind === 'replay') return `${int(agg.rate.median)} msg/s, RSS ${mb(agg.rssBeforeMB.median)} -> ${mb(agg.rssPeakMB.median)} MB (+${mb(agg.rssGrowthMB.median)})${withSpread ? ` (${spread([agg.rate.min, agg.rate.max], int)} msg/s; +${spread([agg.rssGrowthMB.min, agg.rssGrowthMB.max], mb)} MB)` : ''}`;
  if (target.kind) return `${mb(agg.value.median)} MB (peak ${mb(agg.hwm.median)}), ${agg.seconds.median.toFixed(1)} s${withSpread ? ` (${spread([agg.value.min, agg.value.max], mb)})` : ''}`;
  return `${int(agg.rate.median)}${withSpread ? ` (${spread([agg.rate.min, agg.rate.max], int)})` : ''}`;
}

/** the server's CPU per message (per delivery in fan-out), from its CPU share and the rate */
function cpuPerMessage(target, agg) {
  if (!agg || agg.na || agg.failed || (target.kind && target.kind !== 'replay') || target.latency || !agg.cpu?.brokerPct || !agg.rate) return '';
  return ` [${((agg.cpu.brokerPct / 100) * (1e6 / agg.rate.median)).toFixed(1)} µs]`;
}

function ratio(a, b) {
  if (!a?.value || !b?.value || a.na || b.na || a.failed || b.failed) return '-';
  const r = a.value.median / b.value.median;
  return r >= 10 ? `${r.toFixed(0)}x` : r >= 0.1 ? `${r.toFixed(2)}x` : `${r.toFixed(3)}x`;
}

function check(agg) {
  if (!agg) return '-';
  if (agg.failed) return 'FAILED';
  return agg.problems.length > 0 ? 'PROBLEMS (below)' : agg.warnings.length > 0 ? 'ok (disturbed)' : 'ok';
}

function printTable(header, lines) {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  console.log(fmt(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const l of lines) console.log(fmt(l));
}

function printResults(rows) {
  const unitOf = (s) => (s.latency ? 'ms' : s.kind && s.kind !== 'replay' ? 'MB' : s.unit);
  printTable(
    ['scenario', 'unit', 'Whisker median (min - max)', 'check', 'Kitten-MQ 0.12.3', 'W/K', 'ws relay, 1 msg/frame', 'W/relay', 'ws relay, 50 msg/frame', 'W/relay50'],
    rows.map(({ scenario: s, whisker: w, kitten: k, relay1: r1, relay50: r50 }) => [
      s.label,
      unitOf(s),
      cell(s, w),
      check(w),
      cell(s, k),
      ratio(w, k),
      cell(s, r1, { withSpread: false }),
      ratio(w, r1),
      cell(s, r50, { withSpread: false }),
      ratio(w, r50),
    ]),
  );
  if (PEERS.length > 0) {
    console.log('\nBeside the production peers (same rows, same producer and receivers; server CPU per message in brackets):');
    const peerRows = rows.filter((r) => r.scenario.peer);
    printTable(
      ['scenario', 'unit', 'Whisker', ...PEERS.flatMap((p) => [p.label, `W/${p.key}`])],
      peerRows.map(({ scenario: s, whisker: w, peers }) => [s.label, unitOf(s), `${cell(s, w, { withSpread: false })}${cpuPerMessage(s, w)}`, ...PEERS.flatMap((p) => [`${cell(s, peers[p.key], { withSpread: false })}${cpuPerMessage(s, peers[p.key])}`, ratio(w, peers[p.key])])]),
    );
  }
  console.log('\nratios are Whisker / other: for msg/s higher is better for Whisker, for ms (p99) and MB lower is');
  console.log('\nWhisker, more detail (medians):');
  printTable(
    ['scenario', 'CPU broker(s)/prod/recv/other', 'deliveries per frame', 'broker RSS MB', 'broker longest pause ms', 'notes'],
    rows.map(({ scenario: s, whisker: w }) => {
      if (!w || w.failed) return [s.key, '-', '-', '-', '-', w?.failed ?? ''];
      if (s.kind === 'replay') return [s.key, `${pct(w.cpu.brokerPct)} / - / ${pct(w.cpu.receiversPct)} / ${pct(w.cpu.otherPct)}`, String(w.deliveriesPerFrame), `${mb(w.rssBeforeMB.median)} -> peak ${mb(w.rssPeakMB.median)} (+${mb(w.rssGrowthMB.median)}; runs +${spread([w.rssGrowthMB.min, w.rssGrowthMB.max], mb)})`, '-', `${w.seconds.median.toFixed(1)} s for ${int(w.count)}`];
      if (s.kind) {
        const drained = w.drain ? `; drained at ${int(w.drain.rate.median)} msg/s (broker ${pct(w.drain.brokerPct)}, RSS peak by its end ${mb(w.drain.hwmMB.median)} MB)` : '';
        const pause = w.drain ? `${ms(w.drain.pauseMs.median)} while draining (${spread([w.drain.pauseMs.min, w.drain.pauseMs.max], ms)})` : '-';
        return [s.key, `${pct(w.cpu.brokerPct)} broker`, '-', `${mb(w.value.median)} (peak ${mb(w.hwm.median)}; before ${mb(w.rssBefore.median)})`, pause, `${int(w.rate.median)} ${s.kind === 'idle' ? 'connections' : 'msg'}/s while ${s.kind === 'idle' ? 'connecting' : 'sending'}${drained}`];
      }
      const pause = w.brokerPauseMs ? `${ms(w.brokerPauseMs.median)} (${spread([w.brokerPauseMs.min, w.brokerPauseMs.max], ms)})` : '-';
      return [s.key, `${pct(w.cpu.brokerPct)} / ${pct(w.cpu.producerPct)} / ${pct(w.cpu.receiversPct)} / ${pct(w.cpu.otherPct)}`, String(w.deliveriesPerFrame), mb(w.brokerRssMB), pause, w.notes.join('; ')];
    }),
  );
  for (const { scenario: s, whisker: w } of rows.filter((r) => r.whisker?.includingWarmup)) {
    const iw = w.includingWarmup;
    console.log(`\n${s.key} including the warm-up messages: p50 ${ms(iw.p50.median)} / p99 ${ms(iw.p99.median)} / max ${ms(iw.max.median)} ms (max ${spread([iw.max.min, iw.max.max], ms)})`);
    const worst = w.runs.filter((r) => r.latency).map((r, i) => `run ${i + 1}: ${r.latency.worst.slice(0, 3).map((x) => `#${x.seq} ${ms(x.ms)} ms`).join(', ')}`);
    console.log(`slowest deliveries after warm-up (seq, latency): ${worst.join('; ')}`);
  }
  const problems = rows.flatMap((r) => (r.whisker?.problems ?? []).map((p) => `  ${r.scenario.key}, ${p}`));
  if (problems.length > 0) {
    console.log('\nProblems (a benchmark that loses or duplicates messages is a bug report, not a figure):');
    for (const p of problems) console.log(p);
  }
  const seen = new Set();
  const others = rows.flatMap((r) =>
    [['Kitten-MQ', r.kitten], ['relay', r.relay1], ['relay50', r.relay50], ...PEERS.map((p) => [p.label, r.peers?.[p.key]])].flatMap(([name, agg]) => {
      if (!agg || seen.has(agg)) return [];
      seen.add(agg);
      return [...(agg.problems ?? []), ...(agg.warnings ?? [])].map((p) => `  ${r.scenario.key}, ${name} ${p}`);
    }),
  );
  if (others.length > 0) {
    console.log('\nReference, relay and peer notes (not checked: Kitten-MQ promises at least once, so do the peers):');
    for (const p of others.slice(0, 30)) console.log(p);
  }
  const warnings = rows.flatMap((r) => (r.whisker?.warnings ?? []).map((p) => `  ${r.scenario.key}, ${p}`));
  if (warnings.length > 0) {
    console.log('\nWarnings:');
    for (const w of warnings) console.log(w);
  }
  const logs = rows.flatMap((r) => (r.whisker?.runs ?? []).flatMap((run, i) => (run.brokerLog ?? []).map((l) => `  ${r.scenario.key} run ${i + 1}: ${l}`)));
  if (logs.length > 0) {
    console.log('\nBroker output (log level warn):');
    for (const l of logs.slice(0, 30)) console.log(l);
  }
}

// ---- main --------------------------------------------------------------------------------

/** which code is measured: the commit, and whether src/ differs from it */
function codeVersion() {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean).length;
    return { commit, uncommittedSrcFiles: dirty };
  } catch {
    return { commit: 'unknown', uncommittedSrcFiles: null };
  }
}

const started = now();
const code = codeVersion();
const cpuModel = cpus()[0]?.model ?? 'unknown CPU';
console.log(`Whisker benchmark: ${RUNS} run(s) per row, loopback 127.0.0.1, ~100-byte JSON messages, producer window ${int(WINDOW)} sends`);
console.log(`node ${process.version}, ${cpus().length} x ${cpuModel}; code ${code.commit}${code.uncommittedSrcFiles ? ` + ${code.uncommittedSrcFiles} uncommitted file(s) in src/` : ''}; fresh server processes per run`);
console.log('throughput = messages received / (first send -> last delivery)');
const referenceUnavailable = prepareReference();
if (referenceUnavailable) console.log(`reference Kitten-MQ ${KITTEN_VERSION}: n/a, ${referenceUnavailable}`);
if (!WITH_RELAY) console.log('ws relay: left out (--no-relay)');
for (const peer of PEERS) {
  peer.why = peer.unavailable();
  console.log(`${peer.system.name}: ${peer.why ? `n/a (${peer.why})` : peer.system.durability}`);
}
console.log('');
if (CPU_PROF) mkdirSync(join(resultsDir, 'prof'), { recursive: true });

const scaled = (t) => ({ ...t, count: Math.max(1, Math.round(t.count * SCALE)) });
const shared = new Map(); // kitten and relay results by target key
const rows = [];
for (const s of SCENARIOS) {
  const row = { scenario: s };
  const base = { receivers: s.receivers, mode: s.mode, prefetch: s.prefetch, count: s.count, latency: s.latency, warmup: s.warmup, rate: s.rate ? (RATE ?? s.rate) : undefined, kind: s.kind, processes: s.processes };
  if (SYSTEMS.includes('whisker')) row.whisker = await measure(whisker, scaled({ ...base, unit: s.unit, store: s.store, map: s.map, brokers: s.brokers, drain: s.drain }), s.key);
  if (s.kitten) {
    if (referenceUnavailable) row.kitten = { na: referenceUnavailable };
    else {
      if (!shared.has(s.kitten.key)) shared.set(s.kitten.key, await measure(kitten, scaled({ ...base, unit: s.unit, ...s.kitten }), s.kitten.key));
      row.kitten = shared.get(s.kitten.key);
    }
  }
  row.peers = {};
  for (const peer of s.peer ? PEERS : []) {
    if (s.kind === 'replay' && !peer.system.replayer) continue; // NATS JetStream only: a stream replayed
    if (peer.why) row.peers[peer.key] = { na: peer.why };
    else {
      const key = `${peer.key}-${s.peer.key}`;
      if (!shared.has(key)) shared.set(key, await measure(peer.system, scaled({ ...base, unit: s.unit, ...s.peer }), key));
      row.peers[peer.key] = shared.get(key);
    }
  }
  if (s.relay && WITH_RELAY) {
    for (const [slot, r] of [['relay1', s.relay.b1], ['relay50', s.relay.b50]]) {
      if (!r) continue;
      const key = `relay-${r.key}-b${r.batch}`;
      if (!shared.has(key)) shared.set(key, await measure(relay, scaled({ ...base, unit: s.unit, ...r }), key));
      row[slot] = shared.get(key);
    }
  }
  rows.push(row);
}
let cluster = null;
const clusterWhy = WITH_CLUSTER ? clusterUnavailable() : null;
if (WITH_CLUSTER && !clusterWhy) cluster = await measureCluster({ runs: RUNS, count: Math.max(1, Math.round(40_000 * SCALE)) });
console.log('');
const stores = new Set(rows.flatMap((r) => (r.whisker?.runs ?? []).map((run) => run.durableStore)).filter((x) => x !== undefined));
console.log(`Whisker store: durable (data/store written) unless the row says "memory store"${stores.size === 0 ? '' : `; durable store written in ${rows.filter((r) => r.whisker?.runs?.some((run) => run.durableStore)).length} of ${rows.length} rows`}`);
if (peersRefused.reason) console.log(`Mirror rows ran WITHOUT peers: a broker refused them (${peersRefused.reason})`);
console.log('');
printResults(rows);
if (cluster) printCluster(cluster);
else if (clusterWhy) console.log(`\ncluster: n/a (${clusterWhy})`);
const totalSeconds = (now() - started) / 1000;
console.log(`\ntotal ${totalSeconds.toFixed(1)} s; CPU columns are % of one core over the measured window (medians; recv is the sum over receivers; other = the rest of the machine, a disturbance)`);

const formats = measureFormats();
const p100Rate = rows.find((r) => r.scenario.key === 'p100')?.whisker?.rate?.median;
const perMessageUs = p100Rate ? 1e6 / p100Rate : null;
console.log(`\nchannel format, 10-field map with conversions (in-process): ${Math.round(formats.checksPerSecond).toLocaleString('en-US')} checks/s, ` +
  `${formats.microsecondsPerCheck.toFixed(2)} µs per message${perMessageUs ? ` (${((formats.microsecondsPerCheck / perMessageUs) * 100).toFixed(1)}% of the broker's ${perMessageUs.toFixed(0)} µs per message at prefetch 100)` : ''}`);

mkdirSync(resultsDir, { recursive: true });
const out = {
  formats: { checksPerSecond: formats.checksPerSecond, microsecondsPerCheck: formats.microsecondsPerCheck },
  date: new Date().toISOString(),
  node: process.version,
  cpus: cpus().length,
  cpuModel,
  code,
  runsPerRow: RUNS,
  scale: SCALE,
  cpuProfile: CPU_PROF,
  reference: { system: `kitten-mq ${KITTEN_VERSION}`, unavailable: referenceUnavailable },
  peersRefused: peersRefused.reason,
  productionPeers: PEERS.map((p) => ({ key: p.key, system: p.system.name, durability: p.system.durability, unavailable: p.why })),
  totalSeconds,
  cluster,
  rows: rows.map((r) => ({ key: r.scenario.key, label: r.scenario.label, unit: r.scenario.latency ? 'ms' : r.scenario.kind && r.scenario.kind !== 'replay' ? 'MB' : r.scenario.unit, scenario: r.scenario, whisker: r.whisker, kitten: r.kitten, relay1: r.relay1, relay50: r.relay50, peers: r.peers })),
};
const defaultRun = !ONLY && SKIP.length === 0 && WINDOW === 2000 && typeof args.systems !== 'string' && !CPU_PROF && SCALE === 1 && RUNS === 3 && !RATE && !NO_DRAIN && !BROKER_FLAGS.length && !Object.keys(BROKER_CONFIG).length && WITH_REFERENCE && WITH_RELAY && !args['no-peers'];
const file = defaultRun ? (WITH_RSS ? 'latest-with-rss.json' : 'latest.json') : `partial-${Date.now()}.json`;
writeFileSync(join(resultsDir, file), `${JSON.stringify(out, null, 2)}\n`);
console.log(`results written to bench/results/${file}`);
process.exitCode = rows.some((r) => r.whisker?.problems?.length > 0 || r.whisker?.failed) ? 1 : 0;
