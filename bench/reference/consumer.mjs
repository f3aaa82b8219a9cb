// One receiving process of the reference system (Kitten-MQ 0.12.3 client): a consumer
// (`consume`; the prefetch is the channel's, set in the broker's config: Kitten-MQ has no
// per-consumer prefetch) or a listener (`listen`). Kitten-MQ does not confirm a subscription,
// so the process reports ready `settleMs` after sending it.
import { createRequire } from 'node:module';
import { onConfig, tally, withTimeout } from '../lib.mjs';

const kitten = createRequire(import.meta.url)('kitten-mq');

onConfig(async (config) => {
  const { hosts, clientId, keysDirectory, channel, mode, settleMs = 300 } = config;
  const c = kitten.client();
  const t = tally(config, () => new Promise((resolve) => c.disconnect(resolve)));
  await withTimeout(new Promise((resolve) => c.connect({ hosts, clientId, keysDirectory, keysName: 'client' }, resolve)), 15_000, `${clientId} connect`);
  if (mode === 'listen') {
    c.listen(channel, (err, msg, info) => t.onMessage(err, msg, info?.nbRequeues));
  } else {
    c.consume(channel, (err, msg, done, info) => {
      t.onMessage(err, msg, info?.nbRequeues);
      if (!err) done();
    });
  }
  await new Promise((resolve) => setTimeout(resolve, settleMs));
  await t.started();
});
