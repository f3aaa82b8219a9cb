/* eslint-disable no-undef, no-empty, @typescript-eslint/no-require-imports */
// A preload for a broker under a benchmark: where its RSS goes. Every MEMPROBE_MS (250) ms, and on
// SIGWINCH (run.mjs sends one when it reads the RSS of a waiting row), appends one JSON line to
// $MEMPROBE_FILE: process.memoryUsage(), V8's spaces (committed / used, MB) and
// /proc/self/smaps_rollup (MB). With --expose-gc a SIGWINCH also writes a line after a full GC.
// node bench/run.mjs --only=rss1m ... --broker-flags="--require ./bench/mem-probe.cjs" with
// MEMPROBE_FILE=/tmp/x.jsonl in the environment; bench/mem-probe-read.mjs /tmp/x.jsonl reads it.
const fs = require('node:fs');
const v8 = require('node:v8');
const file = process.env.MEMPROBE_FILE;
if (file) {
  const t0 = Date.now();
  const mb = (x) => Math.round(x / 1e5) / 10;
  const snap = (mark) => {
    const mu = process.memoryUsage();
    const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name.replace('_space', ''), [mb(s.space_size), mb(s.space_used_size)]]));
    const smaps = {};
    try {
      for (const line of fs.readFileSync('/proc/self/smaps_rollup', 'utf8').split('\n')) {
        const m = /^(\w+):\s+(\d+) kB/.exec(line);
        if (m && ['Rss', 'Anonymous', 'Shared_Clean', 'Private_Clean', 'Private_Dirty', 'Swap'].includes(m[1])) smaps[m[1]] = Math.round(Number(m[2]) / 100) / 10;
      }
    } catch {}
    fs.appendFileSync(file, JSON.stringify({ t: Date.now() - t0, mark, rss: mb(mu.rss), heapTotal: mb(mu.heapTotal), heapUsed: mb(mu.heapUsed), external: mb(mu.external), ab: mb(mu.arrayBuffers), spaces, smaps }) + '\n');
  };
  setInterval(snap, Number(process.env.MEMPROBE_MS ?? 250)).unref();
  process.on('SIGWINCH', () => {
    snap('measure');
    // MEMPROBE_SMAPS: every mapping's figures at this reading too (/proc/self/smaps)
    if (process.env.MEMPROBE_SMAPS) fs.writeFileSync(process.env.MEMPROBE_SMAPS, fs.readFileSync('/proc/self/smaps', 'utf8'));
    if (typeof global.gc === 'function') {
      global.gc();
      snap('after-gc');
    }
  });
}
