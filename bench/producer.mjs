// One Whisker producer process: connects to every broker in `hosts`, sends `count` messages
// (flat out with a bounded window of unanswered sends, or paced at `rate` per second; `shape`
// 'map' sends messages fitting the channel's map), then reports when every send was answered.
import { client } from '../dist/index.js';
import { onConfig, produce, report, withTimeout } from './lib.mjs';

onConfig(async ({ hosts, clientId, keysDirectory, channel, ...options }) => {
  const c = client();
  await withTimeout(c.connect({ hosts, clientId, keysDirectory }), 15_000, `${clientId} connect`);
  await report({ type: 'ready' });
  const done = await produce(options, (message, onAnswer) => c.send(channel, message, onAnswer));
  await report(done);
  await c.disconnect();
  process.exit(0);
});
