// A NATS JetStream replaying process (the "replay" row, bench/peers/nats.mjs): on `start`, an
// ordered consumer (no acks, deliver all, the client's fastest way through a stream) reads the
// whole stream once; tally() checks every seq arrives exactly once.
import { createRequire } from 'node:module';
import { onConfig, tally, withTimeout } from '../lib.mjs';
import { STREAM } from './nats.mjs';

const { connect } = createRequire(import.meta.url)('nats');

onConfig(async (config) => {
  const { port, clientId, batch } = config;
  const nc = await withTimeout(connect({ servers: `127.0.0.1:${port}` }), 15_000, `${clientId} connect`);
  const t = tally(config, () => nc.close());
  process.on('message', async (m) => {
    if (m?.type !== 'start') return;
    const consumer = await nc.jetstream().consumers.get(STREAM); // no name: an ordered consumer, deliver all
    const messages = await consumer.consume({ max_messages: batch });
    for await (const msg of messages) t.onMessage(null, msg.json(), 0);
  });
  await t.started();
});
