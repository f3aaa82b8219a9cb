// One Whisker replaying process (the "replay" row): connects, reports ready, and on `start`
// replays the retained channel's whole history (`mq.replay(channel, {}, handler)`); lib.mjs's
// tally() checks that every seq arrives exactly once. `done` of the replay handle is awaited too.
import { client } from '../dist/index.js';
import { onConfig, report, tally, withTimeout } from './lib.mjs';

onConfig(async (config) => {
  const { hosts, clientId, keysDirectory, channel } = config;
  const c = client();
  const t = tally(config, () => c.disconnect());
  c.on('error', (err) => t.clientErrors.push(`${err.code}: ${err.message}`));
  await withTimeout(c.connect({ hosts, clientId, keysDirectory }), 15_000, `${clientId} connect`);
  process.on('message', (m) => {
    if (m?.type !== 'start') return;
    const handle = c.replay(channel, {}, (err, msg, info) => t.onMessage(err, msg, info?.nbRequeues));
    handle.done.then(
      (count) => report({ type: 'replayEnd', count }),
      (error) => report({ type: 'replayEnd', error: `${error.code}: ${error.message}` }),
    );
  });
  await t.started();
});
