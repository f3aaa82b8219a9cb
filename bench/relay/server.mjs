// The bare ws relay: the ceiling of "JSON over WebSocket between node processes" on this
// machine, with nothing of a broker (no auth, no queue, no store, no acks from receivers).
// Usage: node bench/relay/server.mjs PORT
//
// A receiver connects to /?mode=consume or /?mode=listen and is answered {"ready":1}. A producer
// connects to /?mode=produce and sends {"m":message} (one message a frame) or {"ms":[...]} (a
// batch). The relay parses every frame and forwards each message: to the consumers round-robin,
// and to every listener, in frames of the same kind ({"m":..} or {"ms":[..]}, re-serialised).
// Its trivial ack: {"a":N}, N messages taken, one ack frame per turn of the event loop (what a
// broker's group commit answers). Writes of one turn go out together (the socket is corked
// for the turn, as a broker does with writev): still one WebSocket frame per message.
import { WebSocketServer } from 'ws';
import { corked } from './cork.mjs';

const port = Number(process.argv[2]);
const consumers = [];
const listeners = [];
let next = 0;

const server = new WebSocketServer({ host: '127.0.0.1', port, perMessageDeflate: false });
server.on('listening', () => process.stdout.write(`relay listening on ${port}\n`));
server.on('connection', (ws, request) => {
  const mode = new URL(request.url, 'ws://relay').searchParams.get('mode');
  if (mode === 'consume' || mode === 'listen') {
    const list = mode === 'consume' ? consumers : listeners;
    ws.out = corked(ws);
    list.push(ws);
    ws.on('close', () => list.splice(list.indexOf(ws), 1));
    ws.send('{"ready":1}');
    return;
  }
  const send = corked(ws);
  let taken = 0;
  const ack = () => {
    send(`{"a":${taken}}`);
    taken = 0;
  };
  ws.on('message', (data) => {
    const frame = JSON.parse(data);
    if (frame.ms) {
      const batch = frame.ms;
      if (consumers.length > 0) {
        const parts = consumers.map(() => []);
        for (const m of batch) {
          parts[next].push(m);
          next = (next + 1) % consumers.length;
        }
        parts.forEach((part, i) => part.length > 0 && consumers[i].out(JSON.stringify({ ms: part })));
      }
      if (listeners.length > 0) {
        const out = JSON.stringify({ ms: batch });
        for (const l of listeners) l.out(out);
      }
      if (taken === 0) setImmediate(ack);
      taken += batch.length;
    } else {
      if (consumers.length > 0) {
        next = (next + 1) % consumers.length;
        consumers[next].out(JSON.stringify({ m: frame.m }));
      }
      if (listeners.length > 0) {
        const out = JSON.stringify({ m: frame.m });
        for (const l of listeners) l.out(out);
      }
      if (taken === 0) setImmediate(ack);
      taken += 1;
    }
  });
});
process.on('SIGTERM', () => process.exit(0));
