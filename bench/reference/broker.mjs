// The reference system's broker (Kitten-MQ 0.12.3, from bench/node_modules): one process, queues in
// memory only (Kitten-MQ has no store). Usage: node bench/reference/broker.mjs CONFIG.json
// Started this way rather than with its CLI, which writes pid and socket files into the working
// directory and redirects stdout/stderr into log files; the broker itself is the same code.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const kitten = require('kitten-mq');

const configPath = process.argv[2];
if (!configPath) {
  process.stderr.write('usage: node bench/reference/broker.mjs CONFIG.json\n');
  process.exit(2);
}
const broker = kitten.broker(configPath, false);
broker.start(() => process.stdout.write('reference broker ready\n'));
// Kitten-MQ only logs a failed listen ("Broker not started!") and stays up: exit instead
broker._sockets.broker.on('warning', (err) => {
  if (err?.syscall === 'listen') {
    process.stderr.write(`reference broker: ${err.message}\n`);
    process.exit(1);
  }
});
const stop = () => process.exit(0); // memory only: nothing to flush
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
