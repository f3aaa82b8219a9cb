// A listener and a consumer of one channel, each its own client, for test/broker/messages/group-hold.test.ts:
// killed with SIGKILL (its connections lost) or told "disconnect" on stdin. Prints "ready" once both subscribed.
import { createInterface } from 'node:readline';
import { client } from '../../dist/index.js';

const { listener: listenerConfig, worker: workerConfig, channel } = JSON.parse(process.argv[2]);
const listener = client();
const worker = client();
for (const c of [listener, worker]) c.on('error', () => {});
await listener.connect(listenerConfig);
await worker.connect(workerConfig);
await listener.listen(channel, () => {}).ready;
await worker.consume(channel, (err, msg, done) => done?.()).ready;
process.stdout.write('ready\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'disconnect') void Promise.all([listener.disconnect(), worker.disconnect()]).then(() => process.stdout.write('disconnected\n'));
});
