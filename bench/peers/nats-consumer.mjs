// A NATS JetStream receiver (bench/peers/nats.mjs): pulls from its group's durable consumer
// (at most `prefetch` unacked, the consumer's max_ack_pending) and acks each message.
import { createRequire } from 'node:module';
import { onConfig, tally, withTimeout } from '../lib.mjs';
import { STREAM } from './nats.mjs';

const { connect } = createRequire(import.meta.url)('nats');

onConfig(async (config) => {
  const { port, clientId, group, prefetch } = config;
  const nc = await withTimeout(connect({ servers: `127.0.0.1:${port}` }), 15_000, `${clientId} connect`);
  const t = tally(config, () => nc.close());
  const consumer = await nc.jetstream().consumers.get(STREAM, group);
  const messages = await consumer.consume({ max_messages: prefetch });
  await t.started();
  for await (const m of messages) {
    t.onMessage(null, m.json(), m.info.redeliveryCount > 1 ? m.info.redeliveryCount - 1 : 0);
    m.ack();
  }
});
