// The durable store's own cost per message, in process: what a broker asks of it for one
// message at prefetch 100 (append and wait for the commit, assign, deliver, ack = settle and
// remove), 100 messages at a time, on a real log in a temporary directory. Prints the main
// thread's CPU per message (the thread pool's fsyncs are counted apart: wall time, not CPU).
// Usage: node bench/store.mjs [messages, default 200,000] [rounds, default 3]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LogStore } from '../dist/broker/store/log.js';
import { makeMessage } from './lib.mjs';

const GROUP = 'c|1';
const BATCH = 100;

async function once(count) {
  const dir = mkdtempSync(join(tmpdir(), 'whisker-store-bench-'));
  const store = new LogStore(join(dir, 'store'), { dedupeWindowMs: 120_000 });
  await store.load();
  let seq = 0;
  const started = performance.now();
  const cpu0 = process.cpuUsage();
  let pending = null; // the previous batch's deliveries, acked while the next one is stored
  for (let sent = 0; sent < count; sent += BATCH) {
    const messages = [];
    for (let i = 0; i < BATCH; i++) {
      seq++;
      const messageId = `${'p'.repeat(30)}-${seq.toString(36).padStart(8, '0')}`;
      messages.push({ seq, messageId, queue: 'bench/v1', id: '1', data: makeMessage(seq, Date.now()), created: Date.now(), acceptedAt: Date.now(), from: 'bench-producer' });
    }
    const stored = store.append(messages);
    if (pending) store.record(pending.flatMap((m) => [{ kind: 'settle', messageId: m.messageId, group: GROUP, outcome: 'acked' }, { kind: 'remove', messageId: m.messageId }]));
    await stored;
    store.record(messages.map((m) => ({ kind: 'assign', messageId: m.messageId, groups: [GROUP] })));
    store.record(messages.map((m) => ({ kind: 'deliver', messageId: m.messageId, group: GROUP, nbRequeues: 0 })));
    pending = messages;
  }
  store.record(pending.flatMap((m) => [{ kind: 'settle', messageId: m.messageId, group: GROUP, outcome: 'acked' }, { kind: 'remove', messageId: m.messageId }]));
  const cpu = process.cpuUsage(cpu0);
  const seconds = (performance.now() - started) / 1000;
  const { stats } = store;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return { usPerMessage: (cpu.user + cpu.system) / count, perSecond: count / seconds, commits: stats.commits, bytesPerMessage: stats.diskBytes / count };
}

const count = Number(process.argv[2] ?? 200_000);
const rounds = Number(process.argv[3] ?? 3);
await once(20_000); // warm-up
for (let r = 0; r < rounds; r++) {
  const m = await once(count);
  console.log(`store: ${m.usPerMessage.toFixed(2)} µs CPU per message (append, assign, deliver, ack), ${Math.round(m.perSecond).toLocaleString('en-US')} msg/s, ${m.commits} commits, ${m.bytesPerMessage.toFixed(0)} bytes written per message before compaction`);
}
