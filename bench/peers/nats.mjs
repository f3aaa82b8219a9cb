// NATS JetStream as a system of the benchmark: nats-server from the system's packages (Debian:
// nats-server, 2.9 here), started per run on a loopback port with JetStream storing files in
// the run's temporary directory. A publish is answered once the server has written the message
// to its file store, without an fsync (2.9 syncs on its own schedule): not durable at the reply.
// Stream `bench` takes the subject `bench.1`; retention "interest" removes a message once every
// consumer acked it (Whisker's removal); each group is a durable pull consumer with explicit
// acks and max_ack_pending = the prefetch. The waiting and replay rows use "limits" retention
// (kept); the replay row reads the stream with an ordered consumer (nats-replayer.mjs).
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { findCommand, freePort, spawnBinary, stopServer, waitForPort } from '../servers.mjs';

export const STREAM = 'bench';
export const SUBJECT = 'bench.1';
export const CONSUME_GROUP = 'bench';
/** the ordered consumer's pull size in the replay row (nats.js's default is 100) */
const REPLAY_BATCH = 1000;

const require = createRequire(import.meta.url);

/** why NATS cannot run here, or null */
export function natsUnavailable() {
  if (!findCommand('nats-server')) return 'install: apt-get install nats-server';
  try {
    require.resolve('nats');
  } catch {
    return 'install: npm ci --prefix bench (nats)';
  }
  return null;
}

/**
 * `receiving(target)`: what every receiver is told (run.mjs's tally settings); `window`: the
 * producer's unanswered sends at most
 */
export function natsSystem({ receiving, window }) {
  return {
    name: 'NATS JetStream',
    durability: 'file store, no fsync before the reply (NOT durable at the reply)',
    async start(target, dir) {
      const port = await freePort();
      const args = ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', join(dir, 'jetstream')];
      const proc = spawnBinary(findCommand('nats-server'), args, dir);
      try {
        await waitForPort(port, proc, 10_000, 'nats-server');
        await setUp(port, target);
      } catch (error) {
        await stopServer(proc);
        throw error;
      }
      return { port, main: proc, all: [proc], notes: ['file store'] };
    },
    receiver: (t, s, i, clientId) => ['peers/nats-consumer.mjs', { port: s.port, clientId, group: groupOf(t, i), prefetch: t.prefetch ?? 100, ...receiving(t) }],
    producer: (t, s) => ['peers/nats-producer.mjs', { port: s.port, count: t.count, window, rate: t.rate ?? 0 }],
    filler: (t, s) => ['peers/nats-fill.mjs', { port: s.port, count: t.count }],
    replayer: (t, s) => ['peers/nats-replayer.mjs', { port: s.port, clientId: 'bench-replayer', batch: REPLAY_BATCH, ...receiving(t) }],
    async check(t, s) {
      if (t.kind !== 'waiting') return { problems: [] };
      const info = await withManager(s.port, (jsm) => jsm.streams.info(STREAM));
      const depth = info.state.messages;
      return { depth, problems: depth === t.count ? [] : [`stream holds ${depth} after ${t.count} sends`] };
    },
  };
}

function groupOf(target, i) {
  return target.mode === 'listen' ? `l${i + 1}` : CONSUME_GROUP;
}

async function setUp(port, target) {
  const { AckPolicy, RetentionPolicy, StorageType } = require('nats');
  await withManager(port, async (jsm) => {
    await jsm.streams.add({ name: STREAM, subjects: [SUBJECT], storage: StorageType.File, retention: target.kind ? RetentionPolicy.Limits : RetentionPolicy.Interest });
    if (target.kind) return;
    const groups = target.mode === 'listen' ? Array.from({ length: target.receivers }, (_, i) => groupOf(target, i)) : [CONSUME_GROUP];
    for (const group of groups) await jsm.consumers.add(STREAM, { durable_name: group, ack_policy: AckPolicy.Explicit, max_ack_pending: target.prefetch ?? 100 });
  });
}

async function withManager(port, use) {
  const { connect } = require('nats');
  const nc = await connect({ servers: `127.0.0.1:${port}` });
  try {
    return await use(await nc.jetstreamManager());
  } finally {
    await nc.close();
  }
}
