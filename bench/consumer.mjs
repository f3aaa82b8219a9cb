// One Whisker receiving process: a consumer (`consume` with a prefetch) or a listener (`listen`),
// connected to every broker in `hosts`. lib.mjs's tally() counts every seq it sees so the run
// can check exactly-once delivery, and keeps latencies.
import { client } from '../dist/index.js';
import { onConfig, tally, withTimeout } from './lib.mjs';

onConfig(async (config) => {
  const { hosts, clientId, keysDirectory, channel, mode, prefetch } = config;
  const c = client();
  const t = tally(config, () => c.disconnect());
  c.on('error', (err) => t.clientErrors.push(`${err.code}: ${err.message}`));
  await withTimeout(c.connect({ hosts, clientId, keysDirectory }), 15_000, `${clientId} connect`);
  const handle =
    mode === 'listen'
      ? c.listen(channel, (err, msg, info) => t.onMessage(err, msg, info?.nbRequeues))
      : c.consume(channel, { prefetch }, (err, msg, done, info) => {
          t.onMessage(err, msg, info?.nbRequeues);
          done?.();
        });
  await withTimeout(handle.ready, 15_000, `${clientId} subscription ready`);
  await t.started();
});
