// Shared by the benchmark's processes: the clock, the message shape, and how a child reports.
import { monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';

/** ms since the epoch, sub-ms resolution, comparable across processes on one machine */
export const now = () => performance.timeOrigin + performance.now();

const PAD_TO = 100;

/**
 * A ~100-byte JSON message: {"seq":..,"t":..,"pad":"..."}; `pad` makes up the length from the
 * actual seq and timestamp, so every message serialises to PAD_TO bytes (or one more).
 */
export function makeMessage(seq, t) {
  // the length of JSON.stringify({ seq, t, pad: '' }), without serialising: {"seq":,"t":,"pad":""} is 22
  const base = 22 + String(seq).length + String(t).length;
  return { seq, t, pad: PADS[Math.max(0, PAD_TO - base)] };
}
const PADS = Array.from({ length: PAD_TO + 1 }, (_, n) => 'x'.repeat(n));

/** the child's config arrives as the first IPC message; replies go back the same way */
export function onConfig(run) {
  process.once('message', (config) => {
    run(config).catch((error) => {
      report({ type: 'fatal', error: `${error?.code ?? ''} ${error?.stack ?? error}` }).finally(() => process.exit(1));
    });
  });
}

export function report(message) {
  return new Promise((resolve) => {
    if (!process.connected) return resolve();
    process.send(message, () => resolve());
  });
}

export function host(port) {
  return `127.0.0.1:${port}@whisker`;
}

/** a promise that rejects after `ms` with `what` in its message */
export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timeout after ${ms} ms: ${what}`)), ms);
    }),
  ]);
}

/** garbage-collection pauses and event-loop delay of this process, for finding latency spikes */
export function pauses() {
  const gc = { count: 0, totalMs: 0, maxMs: 0, over5ms: 0 };
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gc.count++;
      gc.totalMs += entry.duration;
      gc.maxMs = Math.max(gc.maxMs, entry.duration);
      if (entry.duration > 5) gc.over5ms++;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  return () => {
    observer.disconnect();
    loop.disable();
    const round = (x) => Math.round(x * 100) / 100;
    return {
      gc: { count: gc.count, totalMs: round(gc.totalMs), maxMs: round(gc.maxMs), over5ms: gc.over5ms },
      loopDelay: { p99Ms: round(loop.percentile(99) / 1e6), maxMs: round(loop.max / 1e6) },
    };
  };
}

// ---- messages of the channel with a map ---------------------------------------------------

/** a 10-field map in the map language (docs/formats.md), with conversions; Kitten-MQ reads it too */
export const MAP = {
  seq: ['int', 'min', 0],
  t: ['number'],
  c: ['alpha', 'min', 2, 'max', 16],
  e: ['email'],
  p: ['decimal', 'toNumber'],
  cu: ['alpha', 'min', 3, 'max', 3],
  b: ['binary', 'toBoolean'],
  q: ['numeric', 'toInt'],
  n: ['string', 'optional'],
  k: ['alphanumeric'],
};

/** a message fitting MAP, ~100 bytes as JSON (`n` is optional and left out) */
export function makeMapMessage(seq, t) {
  return { seq, t: Math.round(t * 1000) / 1000, c: 'Ada', e: 'a@b.fr', p: '1.5', cu: 'EUR', b: '1', q: '3', k: 'A1' };
}

// ---- the sending side, shared by Whisker's, the reference's and the relay's producers ---------

/**
 * Sends `count` messages through `sendOne(message, onAnswer)`, flat out with at most `window`
 * unanswered, or paced at `rate` per second; `flush()` (optional) is called after each burst, for
 * a sender that gathers messages into frames. Resolves with what the producer reports as `done`.
 */
export async function produce({ count, window = 2000, rate = 0, shape = 'plain', idleMs = 5000 }, sendOne, flush = () => {}) {
  const make = shape === 'map' ? makeMapMessage : makeMessage;
  const errors = {};
  let next = 0;
  let outstanding = 0;
  let answered = 0;
  let firstErrorMessage = null;
  const cpu0 = process.cpuUsage();
  const stopPauses = pauses();
  let resolveDone;
  const finished = new Promise((resolve) => (resolveDone = resolve));
  let pumping = false;

  let lastAnswer = now();
  const onAnswer = (err) => {
    lastAnswer = now();
    outstanding--;
    answered++;
    if (err) {
      const code = err.code ?? err.message ?? String(err);
      errors[code] = (errors[code] ?? 0) + 1;
      firstErrorMessage ??= `${err.code ?? ''}: ${err.message ?? JSON.stringify(err)}`;
    }
    if (answered === count) resolveDone();
    else if (!rate && !pumping) pump();
  };
  const sendOne1 = () => {
    const seq = next++;
    outstanding++;
    sendOne(make(seq, now()), onAnswer);
  };
  const pump = () => {
    pumping = true;
    while (outstanding < window && next < count) sendOne1();
    pumping = false;
    flush();
  };

  const start = now();
  if (count === 0) resolveDone();
  else if (rate) {
    // paced: every millisecond or so, send what the schedule says is due (a burst of 1-2)
    const tick = () => {
      const due = Math.min(count, Math.floor(((now() - start) * rate) / 1000) + 1);
      while (next < due) sendOne1();
      flush();
      if (next < count) setTimeout(tick, 1);
    };
    tick();
  } else {
    pump();
  }
  // every message sent and no answer for `idleMs`: some sends will never be answered (Kitten-MQ
  // loses the callback of a send whose random 32-bit handler id collides with one in flight)
  const idle = setInterval(() => {
    if (next === count && now() - lastAnswer > idleMs) {
      errors.unanswered = count - answered;
      firstErrorMessage ??= `unanswered: ${count - answered} sends had no answer ${idleMs} ms after the last one`;
      resolveDone();
    }
  }, 250);
  await finished;
  clearInterval(idle);
  const end = answered === count ? now() : lastAnswer;
  const cpu = process.cpuUsage(cpu0);
  return {
    type: 'done',
    start,
    end,
    sent: next,
    answered,
    errors,
    firstErrorMessage,
    cpuMs: (cpu.user + cpu.system) / 1000,
    pauses: stopPauses(),
    rssMB: Math.round(process.memoryUsage().rss / 1e6),
  };
}

// ---- the receiving side, shared by every consumer and listener process -----------------------

const GRACE_MS = 300; // after the last expected message, how long to wait for late duplicates

/**
 * Counts every seq a receiver sees (exactly-once check), keeps latencies, and reports `done`
 * once all expected messages arrived (plus a grace period for late duplicates) or after
 * `idleMs` without a delivery once the producer is done. `close()` is called before exiting.
 * Returns `onMessage(err, msg, nbRequeues)` and `started()`, to call once subscribed.
 */
export function tally({ clientId, expected, latency = false, warmup = 0, idleMs = 5000 }, close) {
  const clientErrors = [];
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
  let idle = null;
  let stopPauses = null;
  // ms after the first delivery at which each tenth of the expected messages had arrived
  const step = Math.max(1, Math.floor(expected / 10));
  const milestones = [];

  // deliveries of one frame reach the handler in one synchronous loop: a microtask marks the end
  let batches = 0;
  let inBatch = false;
  const endBatch = () => (inBatch = false);

  const onMessage = (err, msg, nbRequeues) => {
    const t = now();
    lastActivity = t;
    if (!inBatch) {
      inBatch = true;
      batches++;
      void Promise.resolve().then(endBatch);
    }
    if (err) {
      handlerErrors++;
      firstHandlerError ??= `${err.code ?? ''}: ${err.message ?? JSON.stringify(err)}`;
      return;
    }
    if (deliveries === 0) {
      first = t;
      cpu0 = process.cpuUsage();
    }
    deliveries++;
    if (nbRequeues) redelivered++;
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
      pauses: stopPauses ? stopPauses() : null,
      rssMB: Math.round(process.memoryUsage().rss / 1e6),
      heapUsedMB: Math.round(process.memoryUsage().heapUsed / 1e6),
    });
    try {
      await withTimeout(Promise.resolve(close()), 5000, `${clientId} close`);
    } catch {
      // closing is not measured
    }
    process.exit(0);
  }

  async function started() {
    process.on('message', (m) => {
      if (m?.type === 'producerDone') {
        producerDone = true;
        lastActivity = Math.max(lastActivity, now());
      }
    });
    // a run that stalls: once the producer is done, give up after `idleMs` without a delivery
    idle = setInterval(() => {
      if (producerDone && now() - lastActivity > idleMs) void finish();
    }, 250);
    stopPauses = pauses();
    await report({ type: 'ready' });
  }

  return { onMessage, started, clientErrors };
}

function summarise(values) {
  if (values.length === 0) return null;
  values.sort((a, b) => a - b);
  const at = (q) => values[Math.min(values.length - 1, Math.max(0, Math.ceil(q * values.length) - 1))];
  return { count: values.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: values[values.length - 1], min: values[0] };
}
