// A NATS JetStream producer (bench/peers/nats.mjs): one publish per message, answered by the
// server's PubAck once the message is in the stream, as bench/producer.mjs sends to Whisker.
import { createRequire } from 'node:module';
import { onConfig, produce, report, withTimeout } from '../lib.mjs';
import { SUBJECT } from './nats.mjs';

const { connect } = createRequire(import.meta.url)('nats');

onConfig(async ({ port, ...options }) => {
  const nc = await withTimeout(connect({ servers: `127.0.0.1:${port}` }), 15_000, 'nats producer connect');
  const js = nc.jetstream();
  await report({ type: 'ready' });
  const done = await produce(options, (message, onAnswer) => {
    js.publish(SUBJECT, JSON.stringify(message)).then(() => onAnswer(null), onAnswer);
  });
  await report(done);
  await nc.close();
  process.exit(0);
});
