// One receiving process: a consumer (`consume` with a prefetch) or a listener (`listen`).
// Counts every seq it sees so the run can check exactly-once delivery, and keeps latencies.
import { client } from '../dist/index.js';
import { host, now, onConfig, pauses, report, withTimeout } from './lib.mjs';

const GRACE_MS = 300; // after the last expected message, how long to wait for late duplicates

onConfig(async ({ port, clientId, keysDirectory, channel, mode, prefetch, expected, latency = false, warmup = 0, idleMs = 5000 }) => {
  const c = client();
  c.on('error', (err) => {
    clientErrors.push(`${err.code}: ${err.message}`);
  });
  const clientErrors = [];
  await withTimeout(c.connect({ hosts: [host(port)], clientId, keysDirectory }), 15_000, `${clientId} connect`);

  const seen = new Uint8Array(expected);
  let distinct = 0;
  let deliveries = 0;
  let duplicates = 0;
  let foreign = 0;
  let redelivered = 0;
  let handlerErrors = 0;
  let firstHandlerError = null;
  let first = 0;
  let last = 0;
  let cpu0 = null;
  const latencies = latency ? new Float64Array(expected) : null;
  let producerDone = false;
  let lastActivity = now();
  let finishing = false;
  // ms after the first delivery at which each tenth of the expected messages had arrived
  const step = Math.max(1, Math.floor(expected / 10));
  const milestones = [];

  // deliveries of one frame reach the handler in one synchronous loop: a microtask marks the end
  let batches = 0;
  let inBatch = false;
  const endBatch = () => (inBatch = false);

  const onMessage = (err, msg, info) => {
    const t = now();
    lastActivity = t;
    if (!inBatch) {
      inBatch = true;
      batches++;
      void Promise.resolve().then(endBatch);
    }
    if (err) {
      handlerErrors++;
      firstHandlerError ??= `${err.code}: ${err.message}`;
      return;
    }
    if (deliveries === 0) {
      first = t;
      cpu0 = process.cpuUsage();
    }
    deliveries++;
    if (info?.nbRequeues) redelivered++;
    const seq = msg?.seq;
    if (!Number.isInteger(seq) || seq < 0 || seq >= expected) {
      foreign++;
      return;
    }
    if (seen[seq] > 0) {
      duplicates++;
      if (seen[seq] < 255) seen[seq]++;
      return;
    }
    seen[seq] = 1;
    if (latencies) latencies[seq] = t - msg.t;
    distinct++;
    last = t;
    if (distinct % step === 0) milestones.push(Math.round(t - first));
    if (distinct === expected) setTimeout(finish, GRACE_MS);
  };

  const handle =
    mode === 'listen'
      ? c.listen(channel, (err, msg, info) => onMessage(err, msg, info))
      : c.consume(channel, { prefetch }, (err, msg, done, info) => {
          onMessage(err, msg, info);
          done?.();
        });
  await withTimeout(handle.ready, 15_000, `${clientId} subscription ready`);

  process.on('message', (m) => {
    if (m?.type === 'producerDone') {
      producerDone = true;
      lastActivity = Math.max(lastActivity, now());
    }
  });
  // a run that stalls: once the producer is done, give up after `idleMs` without a delivery
  const idle = setInterval(() => {
    if (producerDone && now() - lastActivity > idleMs) finish();
  }, 250);

  const stopPauses = pauses();
  await report({ type: 'ready' });

  async function finish() {
    if (finishing) return;
    finishing = true;
    clearInterval(idle);
    const cpu = cpu0 ? process.cpuUsage(cpu0) : { user: 0, system: 0 };
    const missing = [];
    let lost = 0;
    for (let i = 0; i < expected; i++) {
      if (seen[i] === 0) {
        lost++;
        if (missing.length < 10) missing.push(i);
      }
    }
    let lat = null;
    if (latencies) {
      // the first `warmup` messages (JIT, first allocations) are reported apart, not in the figures
      const measured = [];
      const all = [];
      for (let i = 0; i < expected; i++) {
        if (seen[i] === 0) continue;
        all.push(latencies[i]);
        if (i >= warmup) measured.push(i);
      }
      lat = summarise(measured.map((i) => latencies[i]));
      if (lat) {
        lat.warmup = warmup;
        lat.includingWarmup = summarise(all);
        // where the tail sits in the run: the slowest deliveries by seq
        measured.sort((a, b) => latencies[b] - latencies[a]);
        lat.worst = measured.slice(0, 10).map((seq) => ({ seq, ms: Math.round(latencies[seq] * 100) / 100 }));
      }
    }
    await report({
      type: 'done',
      clientId,
      first,
      last,
      deliveries,
      batches,
      distinct,
      lost,
      missing,
      duplicates,
      redelivered,
      foreign,
      handlerErrors,
      firstHandlerError,
      clientErrors: clientErrors.slice(0, 5),
      stalled: distinct < expected,
      latency: lat,
      milestones,
      cpuMs: (cpu.user + cpu.system) / 1000,
      pauses: stopPauses(),
      rssMB: Math.round(process.memoryUsage().rss / 1e6),
      heapUsedMB: Math.round(process.memoryUsage().heapUsed / 1e6),
    });
    await c.disconnect();
    process.exit(0);
  }
});

function summarise(values) {
  if (values.length === 0) return null;
  values.sort((a, b) => a - b);
  const at = (q) => values[Math.min(values.length - 1, Math.max(0, Math.ceil(q * values.length) - 1))];
  return { count: values.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: values[values.length - 1], min: values[0] };
}
