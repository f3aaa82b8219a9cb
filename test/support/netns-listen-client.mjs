// A listener, a consumer and a producer on one channel, each its own client (as the nemesis's
// workload.mjs), in their own network namespace, for test/broker/mirror/listener-cut.test.ts.
// Reads commands on stdin ("go", "stop"), writes one JSON event a line on stdout:
// sent/ok/fail (the producer), listened/consumed (a delivery, with nbRequeues), ready, settled.
import { createInterface } from 'node:readline';
import { client } from '../../dist/index.js';

const options = JSON.parse(process.argv[2]);
const emit = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const base = { hosts: options.hosts, keysDirectory: options.keysDirectory, heartbeatTimeout: options.heartbeatTimeout, reconnect: { initialMs: 100, maxMs: 1000 }, connectTimeout: 20000 };
const CHANNEL = 'jobs/v1/1';

async function open(clientId, extra = {}) {
  const c = client();
  c.on('error', () => {});
  await c.connect({ ...base, clientId, ...extra });
  return c;
}

const listener = await open('cut-listener');
await listener.listen(CHANNEL, (err, msg, info) => {
  if (!err) emit({ e: 'listened', seq: msg.seq, n: info.nbRequeues ?? 0 });
}).ready;
const worker = await open('cut-worker', { dedupeWindow: 0 });
await worker.consume(CHANNEL, { prefetch: 5 }, (err, msg, done, info) => {
  if (err) return;
  emit({ e: 'consumed', seq: msg.seq, n: info.nbRequeues ?? 0 });
  done();
}).ready;
const producer = await open('cut-producer', { sendTimeout: options.sendTimeout, maxBufferedMessages: 50000 });
emit({ e: 'ready' });

let timer = null;
let pending = 0;
let n = 0;
let running = false;
const settledWhenIdle = () => {
  if (!running && pending === 0) emit({ e: 'settled' });
};
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'go') {
    running = true;
    timer = setInterval(() => {
      const seq = n++;
      pending++;
      emit({ e: 'sent', seq });
      producer.send(CHANNEL, { seq }).then(
        () => emit({ e: 'ok', seq }),
        (error) => emit({ e: 'fail', seq, code: error.code }),
      ).finally(() => {
        pending--;
        settledWhenIdle();
      });
    }, options.sendEveryMs);
  } else if (line === 'stop') {
    clearInterval(timer);
    running = false;
    settledWhenIdle();
  }
});
