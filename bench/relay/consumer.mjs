// A receiver of the bare ws relay (bench/relay/server.mjs): `mode` consume or listen; counts
// what arrives with the same tally as Whisker's receivers. It sends nothing back.
import WebSocket from 'ws';
import { onConfig, tally, withTimeout } from '../lib.mjs';

onConfig(async (config) => {
  const { port, mode } = config;
  const ws = new WebSocket(`ws://127.0.0.1:${port}/?mode=${mode}`, { perMessageDeflate: false });
  const t = tally(config, () => ws.close());
  let resolveReady;
  const ready = new Promise((resolve) => (resolveReady = resolve));
  ws.on('message', (data) => {
    const frame = JSON.parse(data);
    if (frame.ms) for (const m of frame.ms) t.onMessage(null, m, 0);
    else if (frame.m) t.onMessage(null, frame.m, 0);
    else if (frame.ready) resolveReady();
  });
  ws.on('error', (err) => t.clientErrors.push(err.message));
  await withTimeout(ready, 15_000, 'relay receiver ready');
  await t.started();
});
