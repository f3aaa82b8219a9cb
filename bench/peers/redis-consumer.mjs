// A Redis Streams receiver (bench/peers/redis.mjs): XREADGROUP of at most `prefetch` new entries
// for its group, then XACK of them pipelined with the next read (one round trip per batch).
// Competing consumers share the group `bench`; listeners each have their own group.
import { createRequire } from 'node:module';
import { onConfig, tally, withTimeout } from '../lib.mjs';
import { STREAM } from './redis.mjs';

const Redis = createRequire(import.meta.url)('ioredis');

onConfig(async (config) => {
  const { port, clientId, group, prefetch } = config;
  const consumer = `${clientId}-${process.pid}`;
  const redis = new Redis({ host: '127.0.0.1', port, lazyConnect: true });
  let open = true;
  const t = tally(config, () => {
    open = false;
    redis.disconnect();
  });
  redis.on('error', (err) => open && t.clientErrors.push(err.message));
  await withTimeout(redis.connect(), 15_000, `${clientId} connect`);
  await t.started();
  while (open) {
    let reply;
    try {
      reply = await redis.xreadgroup('GROUP', group, consumer, 'COUNT', prefetch, 'BLOCK', 1000, 'STREAMS', STREAM, '>');
    } catch (error) {
      if (open) t.clientErrors.push(error.message);
      break;
    }
    if (!reply) continue;
    const entries = reply[0][1];
    const ids = new Array(entries.length);
    for (let i = 0; i < entries.length; i++) {
      const [id, fields] = entries[i];
      ids[i] = id;
      t.onMessage(null, JSON.parse(fields[1]), 0);
    }
    // not awaited: the next read follows it on the same connection, in order
    redis.xack(STREAM, group, ...ids).catch((error) => open && t.clientErrors.push(`XACK: ${error.message}`));
  }
});
