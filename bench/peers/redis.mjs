// Redis Streams as a system of the benchmark: redis-server from the system's packages (Debian:
// redis-server), started per run on a loopback port with its own temporary directory, the
// append-only file on. `always`: every write is fsynced before the reply (group commit in the
// event loop, as Whisker's store does; acks are logged too), the like-for-like durable peer.
// `everysec`: fsync once a second, so an answered write can be lost: not durable.
// The stream is `bench:1`; consumers read with XREADGROUP (COUNT = prefetch) and XACK.
import { createRequire } from 'node:module';
import { findCommand, freePort, spawnBinary, stopServer, waitForPort } from '../servers.mjs';

export const STREAM = 'bench:1';
/** the consumer group of competing consumers; listeners each have their own, l1..l4 */
export const CONSUME_GROUP = 'bench';

const require = createRequire(import.meta.url);

/** why Redis cannot run here, or null */
export function redisUnavailable() {
  if (!findCommand('redis-server')) return 'install: apt-get install redis-server';
  try {
    require.resolve('ioredis');
  } catch {
    return 'install: npm ci --prefix bench (ioredis)';
  }
  return null;
}

/**
 * `receiving(target)`: what every receiver is told (run.mjs's tally settings); `window`: the
 * producer's unanswered sends at most
 */
export function redisSystem(fsync, { receiving, window }) {
  return {
    name: `Redis Streams, appendfsync ${fsync}`,
    durability: fsync === 'always' ? 'append-only file, fsync before every reply (durable)' : 'append-only file, fsync once a second (NOT durable: an answered write can be lost)',
    async start(target, dir) {
      const port = await freePort();
      const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', fsync, '--save', '', '--protected-mode', 'no', '--daemonize', 'no', '--logfile', ''];
      const proc = spawnBinary(findCommand('redis-server'), args, dir);
      try {
        await waitForPort(port, proc, 10_000, 'redis-server');
        await setUp(port, target);
      } catch (error) {
        await stopServer(proc);
        throw error;
      }
      return { port, main: proc, all: [proc], notes: [`appendfsync ${fsync}`] };
    },
    receiver: (t, s, i, clientId) => ['peers/redis-consumer.mjs', { port: s.port, clientId, group: groupOf(t, i), prefetch: t.prefetch ?? 100, ...receiving(t) }],
    producer: (t, s) => ['peers/redis-producer.mjs', { port: s.port, count: t.count, window, rate: t.rate ?? 0 }],
    async check(t, s) {
      if (t.kind !== 'waiting') return { problems: [] };
      const length = await withClient(s.port, (redis) => redis.xlen(STREAM));
      return { depth: length, problems: length === t.count ? [] : [`XLEN ${length} after ${t.count} sends`] };
    },
  };
}

function groupOf(target, i) {
  return target.mode === 'listen' ? `l${i + 1}` : CONSUME_GROUP;
}

/** the groups exist before the producer starts: a group made at `$` would miss earlier entries */
async function setUp(port, target) {
  if (target.kind) return;
  const groups = target.mode === 'listen' ? Array.from({ length: target.receivers }, (_, i) => groupOf(target, i)) : [CONSUME_GROUP];
  await withClient(port, async (redis) => {
    for (const group of groups) await redis.xgroup('CREATE', STREAM, group, '0', 'MKSTREAM');
  });
}

async function withClient(port, use) {
  const Redis = require('ioredis');
  const redis = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    return await use(redis);
  } finally {
    redis.disconnect();
  }
}
