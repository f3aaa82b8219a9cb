// A producer of the bare ws relay (bench/relay/server.mjs): sends as bench/producer.mjs does,
// `batch` messages a frame at most (1: one message a frame); the frames of one burst leave in
// one write (cork.mjs).
import WebSocket from 'ws';
import { onConfig, produce, report, withTimeout } from '../lib.mjs';
import { corked } from './cork.mjs';

onConfig(async ({ port, batch = 1, ...options }) => {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/?mode=produce`, { perMessageDeflate: false });
  await withTimeout(new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject))), 15_000, 'relay producer connect');
  // answers come in order: a FIFO of callbacks
  const waiting = [];
  let head = 0;
  ws.on('message', (data) => {
    const n = JSON.parse(data).a;
    for (let i = 0; i < n; i++) waiting[head++]();
    if (head > 100_000) {
      waiting.splice(0, head);
      head = 0;
    }
  });
  const send = corked(ws);
  let pending = [];
  let scheduled = false;
  const flushNow = () => {
    scheduled = false;
    if (pending.length === 0) return;
    send(JSON.stringify({ ms: pending }));
    pending = [];
  };
  const sendOne =
    batch <= 1
      ? (message, onAnswer) => {
          waiting.push(onAnswer);
          send(JSON.stringify({ m: message }));
        }
      : (message, onAnswer) => {
          waiting.push(onAnswer);
          pending.push(message);
          if (pending.length >= batch) flushNow();
        };
  // a batch left incomplete goes out once the current burst of answers and sends is over
  const flush = () => {
    if (batch > 1 && !scheduled && pending.length > 0) {
      scheduled = true;
      queueMicrotask(flushNow);
    }
  };
  await report({ type: 'ready' });
  const done = await produce(options, sendOne, flush);
  await report(done);
  ws.close();
  process.exit(0);
});
