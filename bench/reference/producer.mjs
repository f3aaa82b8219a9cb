// One producer process of the reference system (Kitten-MQ 0.12.3 client): connects to every
// broker in `hosts` (`host:port@serviceId`), then sends as bench/producer.mjs does.
import { createRequire } from 'node:module';
import { onConfig, produce, report, withTimeout } from '../lib.mjs';

const kitten = createRequire(import.meta.url)('kitten-mq');

onConfig(async ({ hosts, clientId, keysDirectory, channel, ...options }) => {
  const c = kitten.client();
  await withTimeout(new Promise((resolve) => c.connect({ hosts, clientId, keysDirectory, keysName: 'client' }, resolve)), 15_000, `${clientId} connect`);
  await report({ type: 'ready' });
  // Kitten-MQ answers a send with (err, data, info); err is { message, error } on a refusal
  const done = await produce(options, (message, onAnswer) => c.send(channel, message, (err) => onAnswer(err ? { code: err.message, message: JSON.stringify(err.error ?? null) } : null)));
  await report(done);
  c.disconnect();
  process.exit(0);
});
