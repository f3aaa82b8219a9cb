// CPU per message of reading a publish frame as a broker session does (the frame's Buffer made
// a string, then decodeClientFrame), by messages per frame, in process. A string over 128 KiB is
// made in V8's large-object space: a frame of 1,000 ~100-byte messages (~245 KB) costs about
// three times a frame of 250 per message (docs/performance.md#the-socket-path).
// Usage: node bench/frame-read.mjs [sizes, default 1000,500,250,100]; DIST=dir for another build.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { makeMessage } from './lib.mjs';

const dist = pathToFileURL(`${resolve(process.env.DIST ?? new URL('../dist', import.meta.url).pathname)}/`).href;
const { decodeClientFrame } = await import(`${dist}protocol/frames.js`);

const frameOf = (n, first) =>
  Buffer.from(
    JSON.stringify({
      type: 'publish',
      messages: Array.from({ length: n }, (_, i) => ({ messageId: (first + i).toString(16).padStart(32, '0'), channel: 'bench/v1/1', data: makeMessage(first + i, Date.now()), created: Date.now() })),
    }),
  );
const sizes = (process.argv[2] ?? '1000,500,250,100').split(',').map(Number);
const frames = new Map(sizes.map((n) => [n, Array.from({ length: Math.ceil(20_000 / n) }, (_, k) => frameOf(n, k * n))]));
console.log(`bytes a frame: ${sizes.map((n) => `${n} messages ${frames.get(n)[0].length}`).join(', ')}`);
const results = new Map(sizes.map((n) => [n, []]));
// sizes alternated, round 0 warms up
for (let round = 0; round < 8; round++) {
  for (const n of sizes) {
    const before = process.cpuUsage();
    let messages = 0;
    for (let rep = 0; rep < 5; rep++) for (const frame of frames.get(n)) messages += decodeClientFrame(frame.toString()).messages.length;
    const cpu = process.cpuUsage(before);
    if (round > 0) results.get(n).push((cpu.user + cpu.system) / messages);
  }
}
for (const [n, r] of results) {
  r.sort((a, b) => a - b);
  console.log(`${n} messages a frame: ${r[r.length >> 1].toFixed(2)} µs CPU per message (median of ${r.length} rounds; ${r[0].toFixed(2)}-${r[r.length - 1].toFixed(2)})`);
}
