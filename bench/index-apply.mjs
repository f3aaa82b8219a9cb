// The durable store's live index alone (src/broker/store/log-index.ts), in process: CPU per
// message for the records one message makes in a queue with `groups` recipient groups (its
// append, the assignment, a delivery and a settlement per group, its removal), 200 in flight.
// Usage: node bench/index-apply.mjs [groups, default 4] [messages, default 200,000] [rounds, default 5]
// (run `npm run build` first; compare two builds by copying dist/ aside and passing its path as
// DIST=/path/to/dist)
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const dist = process.env.DIST ?? join(import.meta.dirname, '..', 'dist');
const { LiveIndex } = await import(pathToFileURL(join(dist, 'broker/store/log-index.js')).href);
const groupCount = Number(process.argv[2] ?? 4);
const count = Number(process.argv[3] ?? 200_000);
const rounds = Number(process.argv[4] ?? 5);
const groups = Array.from({ length: groupCount }, (_, i) => (groupCount === 1 ? 'c|bench-consumer|1' : `l|bench-listener-${i}|1`));
const IN_FLIGHT = 200;

function once(n) {
  const index = new LiveIndex(120_000, () => Date.now());
  const place = { segment: 1, offset: 0, replayed: false, inSnapshot: false };
  const ids = Array.from({ length: n }, (_, i) => `${'p'.repeat(24)}${i.toString(16).padStart(8, '0')}`);
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n + IN_FLIGHT; i++) {
    if (i < n) {
      const id = ids[i];
      index.apply({ k: 'm', m: { seq: i, messageId: id, queue: 'q/v1', id: '1', data: null, created: 0, acceptedAt: Date.now(), from: 'p' } }, 200, place);
      index.apply({ k: 'a', id, g: groups }, 0, place);
      for (const g of groups) index.apply({ k: 'r', id, g, n: 1, nb: 0 }, 0, place);
    }
    const done = i - IN_FLIGHT;
    if (done >= 0) {
      const id = ids[done];
      for (const g of groups) index.apply({ k: 's', id, g, o: 'acked' }, 0, place);
      index.apply({ k: 'x', id }, 0, place);
    }
  }
  const cpu = process.cpuUsage(cpu0);
  return (cpu.user + cpu.system) / n;
}

once(50_000); // warm-up
const figures = Array.from({ length: rounds }, () => once(count).toFixed(2));
console.log(`index apply, ${groupCount} group(s): ${figures.join(' ')} µs CPU per message (${rounds} rounds of ${count.toLocaleString('en-US')})`);
