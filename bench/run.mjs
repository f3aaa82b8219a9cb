// `npm run bench`: starts a real broker process and real client processes on loopback, runs each
// scenario several times, checks that every message arrived exactly once, and prints a table
// (also written to bench/results/latest.json).
//
// Options: --runs=N (default 3), --only=key[,key] (p1, p100, fanout4, latency),
//          --scale=F (multiply message counts), --rate=N (the latency row's paced rate),
//          --cpu-prof (the broker runs with node --cpu-prof; profiles land in
//          bench/results/prof/, read them with bench/profile-summary.mjs),
//          --broker-flags="--trace-gc ..." (extra node flags for the broker; its output is kept
//          in <run dir>/broker.log), --broker-config='{"maxItemsInQueue":1000}' (merged into
//          the broker's config), --keep (keep the temporary run directories).
// Only a full default invocation writes latest.json; others write partial-<time>.json.
import { execFileSync, fork, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { now } from './lib.mjs';
import { measureFormats } from './formats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = dirname(here);
const resultsDir = join(here, 'results');
const CHANNEL = 'bench/v1/1';
const RUN_TIMEOUT_MS = 90_000;

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
const CPU_PROF = Boolean(args['cpu-prof']);
const KEEP = Boolean(args.keep);
const RATE = args.rate ? Number(args.rate) : null; // overrides the latency row's paced rate
const BROKER_CONFIG = typeof args['broker-config'] === 'string' ? JSON.parse(args['broker-config']) : {};
const BROKER_FLAGS = typeof args['broker-flags'] === 'string' ? args['broker-flags'].split(' ').filter(Boolean) : [];

const SCENARIOS = [
  { key: 'p1', label: '1 -> 1 consume, prefetch 1', unit: 'msg/s', receivers: 1, mode: 'consume', prefetch: 1, count: 30_000 },
  { key: 'p100', label: '1 -> 1 consume, prefetch 100', unit: 'msg/s', receivers: 1, mode: 'consume', prefetch: 100, count: 50_000 },
  { key: 'fanout4', label: '1 -> 4 listeners (total deliveries)', unit: 'deliveries/s', receivers: 4, mode: 'listen', count: 50_000 },
  { key: 'latency', label: 'latency, 1,000 msg/s paced, prefetch 100 (after 500 warm-up)', unit: 'ms', receivers: 1, mode: 'consume', prefetch: 100, count: 5_500, warmup: 500, rate: 1000, latency: true },
].filter((s) => !ONLY || ONLY.includes(s.key));

// ---- processes ---------------------------------------------------------------------------

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitForPort(port, broker, ms) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (broker.exitCode !== null) throw new Error(`broker exited with ${broker.exitCode} before listening`);
    const ok = await new Promise((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`broker did not listen on ${port} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** a forked client process and the messages it reports, awaited by type */
class Child {
  constructor(script, name, config) {
    this.name = name;
    this.inbox = [];
    this.waiters = [];
    this.failure = null;
    this.stderr = '';
    this.proc = fork(join(here, script), [], { stdio: ['ignore', 'inherit', 'pipe', 'ipc'] });
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

function startBroker(dir, port, profile) {
  const config = {
    serviceId: 'whisker',
    dataDirectory: join(dir, 'data'),
    registeredClientsPath: join(dir, 'clients'),
    keysDirectory: join(dir, 'broker-keys'),
    socketServer: { host: '127.0.0.1', port },
    maxItemsInQueue: 1_000_000,
    logLevel: 'warn',
    ...BROKER_CONFIG,
  };
  const configPath = join(dir, 'config.json');
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  const nodeArgs = profile ? ['--cpu-prof', `--cpu-prof-dir=${join(resultsDir, 'prof')}`, `--cpu-prof-name=broker-${profile}-${Date.now()}.cpuprofile`] : [];
  const broker = spawn(process.execPath, [...nodeArgs, ...BROKER_FLAGS, join(root, 'bin', 'whisker'), 'start', '-c', configPath], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  broker.output = '';
  broker.stdout.on('data', (d) => (broker.output += d));
  broker.stderr.on('data', (d) => (broker.output += d));
  broker.exited = new Promise((resolve) => broker.on('exit', (code, signal) => resolve({ code, signal })));
  return broker;
}

async function stopBroker(broker) {
  if (broker.exitCode !== null) return { code: broker.exitCode, signal: null, forced: false };
  broker.kill('SIGTERM');
  let timer;
  const timeout = new Promise((resolve) => (timer = setTimeout(() => resolve(null), 10_000)));
  const result = await Promise.race([broker.exited, timeout]);
  clearTimeout(timer);
  if (result) return { ...result, forced: false };
  broker.kill('SIGKILL');
  return { ...(await broker.exited), forced: true };
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

/** resident set size of a process in MB (Linux /proc; null elsewhere) */
function rssMBOf(pid) {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Math.round(Number(kb) / 1000) : null;
  } catch {
    return null;
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

// ---- one run -----------------------------------------------------------------------------

async function runOnce(scenario, index) {
  const dir = mkdtempSync(join(tmpdir(), `whisker-bench-${scenario.key}-`));
  const port = await freePort();
  const broker = startBroker(dir, port, CPU_PROF ? `${scenario.key}-${index + 1}` : null);
  const children = [];
  const count = Math.max(1, Math.round(scenario.count * SCALE));
  let result;
  let timer;
  try {
    await waitForPort(port, broker, 10_000);
    const work = (async () => {
      const receivers = [];
      for (let i = 0; i < scenario.receivers; i++) {
        const clientId = scenario.mode === 'listen' ? `bench-listener-${i + 1}` : 'bench-consumer';
        const child = new Child('consumer.mjs', clientId, {
          port,
          clientId,
          keysDirectory: join(dir, `keys-${clientId}`),
          channel: CHANNEL,
          mode: scenario.mode,
          prefetch: scenario.prefetch,
          expected: count,
          latency: Boolean(scenario.latency),
          warmup: scenario.warmup ?? 0,
        });
        children.push(child);
        receivers.push(child);
      }
      await Promise.all(receivers.map((r) => r.next('ready')));
      const producer = new Child('producer.mjs', 'bench-producer', {
        port,
        clientId: 'bench-producer',
        keysDirectory: join(dir, 'keys-bench-producer'),
        channel: CHANNEL,
        count,
        window: 2000,
        rate: scenario.rate ? (RATE ?? scenario.rate) : 0,
      });
      children.push(producer);
      await producer.next('ready');
      const brokerCpu0 = cpuMsOf(broker.pid);
      const system0 = systemCpu();
      const sent = await producer.next('done');
      for (const r of receivers) r.send({ type: 'producerDone' });
      const received = await Promise.all(receivers.map((r) => r.next('done')));
      const brokerCpu1 = cpuMsOf(broker.pid);
      sent.brokerRssMB = rssMBOf(broker.pid);
      const system1 = systemCpu();
      if (system0 && system1) sent.system = { busyMs: system1.busyMs - system0.busyMs, stealMs: system1.stealMs - system0.stealMs };
      return { sent, received, brokerCpuMs: brokerCpu0 !== null && brokerCpu1 !== null ? brokerCpu1 - brokerCpu0 : null };
    })();
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`run did not finish within ${RUN_TIMEOUT_MS / 1000} s (stall)`)), RUN_TIMEOUT_MS);
    });
    const { sent, received, brokerCpuMs } = await Promise.race([work, timeout]);
    result = summariseRun(scenario, count, sent, received, brokerCpuMs);
  } catch (error) {
    result = { count, failed: error.message, problems: [error.message] };
  } finally {
    clearTimeout(timer);
    for (const c of children) c.kill();
    const exit = await stopBroker(broker);
    result.brokerExit = exit;
    if (exit.code !== 0) result.problems = [...(result.problems ?? []), `broker exit ${exit.code ?? exit.signal}${exit.forced ? ' (SIGKILL after 10 s: SIGTERM did not stop it)' : ''}`];
    result.durableStore = existsSync(join(dir, 'data', 'store'));
    writeFileSync(join(dir, 'broker.log'), broker.output);
    const logLines = BROKER_FLAGS.length > 0 ? [] : broker.output.split('\n').filter((l) => l.trim() && !/^whisker: SIG(TERM|INT)\b/.test(l));
    if (logLines.length > 0) result.brokerLog = logLines.slice(0, 20);
    if (!KEEP) rmSync(dir, { recursive: true, force: true });
  }
  return result;
}

function summariseRun(scenario, count, sent, received, brokerCpuMs) {
  const problems = [];
  const sendErrors = Object.entries(sent.errors);
  if (sendErrors.length > 0) problems.push(`send errors ${sendErrors.map(([k, v]) => `${k}x${v}`).join(' ')} (first: ${sent.firstErrorMessage})`);
  for (const r of received) {
    const who = received.length > 1 ? `${r.clientId}: ` : '';
    if (r.lost > 0) problems.push(`${who}LOST ${r.lost}/${count} (first missing seq ${r.missing.join(',')})`);
    if (r.duplicates > 0) problems.push(`${who}DUPLICATES ${r.duplicates}`);
    if (r.redelivered > 0) problems.push(`${who}${r.redelivered} redeliveries (nbRequeues > 0)`);
    if (r.foreign > 0) problems.push(`${who}${r.foreign} unexpected messages`);
    if (r.handlerErrors > 0) problems.push(`${who}${r.handlerErrors} handler errors (first: ${r.firstHandlerError})`);
    if (r.clientErrors.length > 0) problems.push(`${who}client errors: ${r.clientErrors.join('; ')}`);
    if (r.stalled) problems.push(`${who}stalled: ${r.distinct}/${count} after 5 s idle`);
  }
  const end = Math.max(...received.map((r) => r.last));
  const seconds = (end - sent.start) / 1000;
  const delivered = received.reduce((n, r) => n + r.distinct, 0);
  const run = {
    count,
    seconds,
    rate: delivered / seconds,
    delivered,
    sendAckRate: sent.answered / ((sent.end - sent.start) / 1000),
    cpu: {
      brokerPct: brokerCpuMs !== null ? (100 * brokerCpuMs) / (seconds * 1000) : null,
      producerPct: (100 * sent.cpuMs) / (seconds * 1000),
      receiversPct: received.map((r) => (100 * r.cpuMs) / (seconds * 1000)),
    },
    producerSeconds: (sent.end - sent.start) / 1000,
    rssMB: { broker: sent.brokerRssMB, producer: sent.rssMB, receivers: received.map((r) => r.rssMB) },
    receiverHeapUsedMB: received.map((r) => r.heapUsedMB),
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
  if (scenario.latency) run.latency = received[0].latency;
  return run;
}

// ---- table -------------------------------------------------------------------------------

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const int = (x) => Math.round(x).toLocaleString('en-US');
const ms = (x) => (x < 10 ? x.toFixed(2) : x.toFixed(1));
const spread = (xs, fmt) => `${fmt(Math.min(...xs))} - ${fmt(Math.max(...xs))}`;
const pct = (x) => (x === null || x === undefined ? '-' : `${Math.round(x)}%`);

function aggregate(scenario, runs) {
  const ok = runs.filter((r) => !r.failed);
  const agg = { key: scenario.key, label: scenario.label, unit: scenario.unit, count: runs[0]?.count, runs };
  agg.problems = runs.flatMap((r, i) => (r.problems ?? []).map((p) => `run ${i + 1}: ${p}`));
  agg.warnings = runs.flatMap((r, i) => (r.warnings ?? []).map((p) => `run ${i + 1}: ${p}`));
  if (ok.length === 0) return agg;
  if (scenario.latency) {
    for (const q of ['p50', 'p99', 'max']) {
      const xs = ok.map((r) => r.latency[q]);
      agg[q] = { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
      const ws = ok.map((r) => r.latency.includingWarmup[q]);
      agg.includingWarmup ??= {};
      agg.includingWarmup[q] = { median: median(ws), min: Math.min(...ws), max: Math.max(...ws) };
    }
  } else {
    const xs = ok.map((r) => r.rate);
    agg.rate = { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
  }
  agg.cpu = {
    brokerPct: median(ok.map((r) => r.cpu.brokerPct ?? 0)),
    producerPct: median(ok.map((r) => r.cpu.producerPct)),
    receiversPct: median(ok.map((r) => r.cpu.receiversPct.reduce((a, b) => a + b, 0))),
    otherPct: median(ok.map((r) => r.cpu.otherPct ?? 0)),
  };
  return agg;
}

function printTable(rows) {
  const header = ['scenario', 'messages', 'median', 'spread (min - max)', 'CPU broker/prod/recv/other', 'check'];
  const lines = rows.map((row) => {
    const check = row.problems.length > 0 ? 'PROBLEMS (below)' : row.warnings.length > 0 ? 'ok (disturbed)' : 'ok';
    const cpu = row.cpu ? `${pct(row.cpu.brokerPct)} / ${pct(row.cpu.producerPct)} / ${pct(row.cpu.receiversPct)} / ${pct(row.cpu.otherPct)}` : '-';
    if (row.p50) {
      return [
        row.label,
        int(row.count),
        `p50 ${ms(row.p50.median)} / p99 ${ms(row.p99.median)} / max ${ms(row.max.median)} ms`,
        `p50 ${spread([row.p50.min, row.p50.max], ms)}, p99 ${spread([row.p99.min, row.p99.max], ms)}, max ${spread([row.max.min, row.max.max], ms)}`,
        cpu,
        check,
      ];
    }
    if (!row.rate) return [row.label, int(row.count ?? 0), 'FAILED', '-', '-', check];
    return [row.label, int(row.count), `${int(row.rate.median)} ${row.unit}`, spread([row.rate.min, row.rate.max], int), cpu, check];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  console.log(fmt(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const l of lines) console.log(fmt(l));
  for (const row of rows.filter((r) => r.includingWarmup)) {
    const w = row.includingWarmup;
    console.log(`\n${row.key} including the warm-up messages: p50 ${ms(w.p50.median)} / p99 ${ms(w.p99.median)} / max ${ms(w.max.median)} ms (max ${spread([w.max.min, w.max.max], ms)})`);
    const worst = row.runs.filter((r) => r.latency).map((r, i) => `run ${i + 1}: ${r.latency.worst.slice(0, 3).map((x) => `#${x.seq} ${ms(x.ms)} ms`).join(', ')}`);
    console.log(`slowest deliveries after warm-up (seq, latency): ${worst.join('; ')}`);
  }
  const problems = rows.flatMap((r) => r.problems.map((p) => `  ${r.key}, ${p}`));
  if (problems.length > 0) {
    console.log('\nProblems (a benchmark that loses or duplicates messages is a bug report, not a figure):');
    for (const p of problems) console.log(p);
  }
  const warnings = rows.flatMap((r) => r.warnings.map((p) => `  ${r.key}, ${p}`));
  if (warnings.length > 0) {
    console.log('\nWarnings:');
    for (const w of warnings) console.log(w);
  }
  const logs = rows.flatMap((r) => r.runs.flatMap((run, i) => (run.brokerLog ?? []).map((l) => `  ${r.key} run ${i + 1}: ${l}`)));
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
console.log(`Whisker benchmark: ${RUNS} run(s) per row, loopback 127.0.0.1, ~100-byte JSON messages, producer window 2,000 sends`);
console.log(`node ${process.version}, ${cpus().length} x ${cpuModel}; code ${code.commit}${code.uncommittedSrcFiles ? ` + ${code.uncommittedSrcFiles} uncommitted file(s) in src/` : ''}; a fresh broker process per run`);
console.log('throughput = messages received / (first send -> last delivery)\n');
if (CPU_PROF) mkdirSync(join(resultsDir, 'prof'), { recursive: true });

const rows = [];
for (const scenario of SCENARIOS) {
  const runs = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = now();
    const run = await runOnce(scenario, i);
    runs.push(run);
    const what = run.failed
      ? `FAILED: ${run.failed}`
      : scenario.latency
        ? `p50 ${ms(run.latency.p50)} ms, p99 ${ms(run.latency.p99)} ms, max ${ms(run.latency.max)} ms`
        : `${int(run.rate)} ${scenario.unit}`;
    process.stderr.write(`  ${scenario.key} run ${i + 1}/${RUNS}: ${what}${run.problems?.length ? ` [${run.problems.length} problem(s)]` : ''} (${((now() - t0) / 1000).toFixed(1)} s)\n`);
  }
  rows.push(aggregate(scenario, runs));
}
console.log('');
const stores = new Set(rows.flatMap((r) => r.runs.map((run) => run.durableStore)));
console.log(`broker store: ${stores.size > 1 ? 'mixed' : stores.has(true) ? 'durable (data/store written)' : 'in memory (no data/store)'}\n`);
printTable(rows);
const totalSeconds = (now() - started) / 1000;
console.log(`\ntotal ${totalSeconds.toFixed(1)} s; CPU columns are % of one core over the measured window (medians; recv is the sum over receivers; other = the rest of the machine, a disturbance)`);

const formats = measureFormats();
const p100Rate = rows.find((r) => r.key === 'p100')?.rate?.median;
const perMessageUs = p100Rate ? 1e6 / p100Rate : null;
console.log(`\nchannel format, 10-field map with conversions: ${Math.round(formats.checksPerSecond).toLocaleString('en-US')} checks/s, ` +
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
  totalSeconds,
  rows,
};
const file = ONLY || CPU_PROF || SCALE !== 1 || RUNS !== 3 || RATE || BROKER_FLAGS.length || Object.keys(BROKER_CONFIG).length ? `partial-${Date.now()}.json` : 'latest.json';
writeFileSync(join(resultsDir, file), `${JSON.stringify(out, null, 2)}\n`);
console.log(`results written to bench/results/${file}`);
process.exitCode = rows.some((r) => r.problems.length > 0) ? 1 : 0;
