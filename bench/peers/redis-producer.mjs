// A Redis Streams producer (bench/peers/redis.mjs): one XADD per message, pipelined by ioredis
// (commands of one turn leave in one write), as bench/producer.mjs sends to Whisker. The reply
// comes once the append-only file is written (and fsynced, with appendfsync always).
import { createRequire } from 'node:module';
import { onConfig, produce, report, withTimeout } from '../lib.mjs';
import { STREAM } from './redis.mjs';

const Redis = createRequire(import.meta.url)('ioredis');

onConfig(async ({ port, ...options }) => {
  const redis = new Redis({ host: '127.0.0.1', port, lazyConnect: true, enableAutoPipelining: true });
  await withTimeout(redis.connect(), 15_000, 'redis producer connect');
  await report({ type: 'ready' });
  const done = await produce(options, (message, onAnswer) => {
    redis.xadd(STREAM, '*', 'd', JSON.stringify(message)).then(() => onAnswer(null), onAnswer);
  });
  await report(done);
  redis.disconnect();
  process.exit(0);
});
