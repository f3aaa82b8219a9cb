// A producer and a consumer in their own network namespace, for test/broker/mirror/partition.test.ts
// and election-partition.test.ts (events fed to test/support/netns-checker.ts).
// Reads commands on stdin ("go <run>", "stop"), writes one JSON event a line on stdout.
import { createInterface } from 'node:readline';
import { client } from '../../dist/index.js';

const options = JSON.parse(process.argv[2]);
const emit = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const base = { hosts: options.hosts, keysDirectory: options.keysDirectory, heartbeatTimeout: options.heartbeatTimeout, reconnect: { initialMs: 100, maxMs: 1000 }, connectTimeout: 20000 };

const consumer = client();
consumer.on('master', (id) => emit({ e: 'master', id }));
consumer.on('error', () => {});
consumer.on('stale', (id, type) => emit({ e: 'stale', id, type }));
await consumer.connect({ ...base, clientId: 'partition-worker', dedupeWindow: 0 });
await consumer.consume('jobs/v1/1', { prefetch: 10 }, (err, msg, done, info) => {
  if (err) return;
  emit({ e: 'got', seq: msg.seq, n: info.nbRequeues });
  done();
}).ready;
const producer = client();
producer.on('error', () => {});
producer.on('stale', (id, type) => emit({ e: 'stale', id, type }));
await producer.connect({ ...base, clientId: 'partition-producer', sendTimeout: options.sendTimeout });
emit({ e: 'ready' });

let run = null;
let pending = 0;
let n = 0;
let timer = null;
const settledWhenIdle = () => {
  if (run === null && pending === 0) emit({ e: 'settled' });
};
const sendOne = (label) => {
  const seq = `${label}-${n++}`;
  pending++;
  emit({ e: 'sent', seq });
  producer.send('jobs/v1/1', { seq }).then(
    () => emit({ e: 'ok', seq }),
    (error) => emit({ e: 'fail', seq, code: error.code }),
  ).finally(() => {
    pending--;
    settledWhenIdle();
  });
};
createInterface({ input: process.stdin }).on('line', (line) => {
  const [command, label] = line.split(' ');
  if (command === 'go') {
    run = label;
    timer = setInterval(() => sendOne(label), options.sendEveryMs);
  } else if (command === 'stop') {
    clearInterval(timer);
    run = null;
    settledWhenIdle();
  }
});
