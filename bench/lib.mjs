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
  const base = JSON.stringify({ seq, t, pad: '' });
  return { seq, t, pad: 'x'.repeat(Math.max(0, PAD_TO - base.length)) };
}

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
