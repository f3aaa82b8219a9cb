// One process holding `count` idle client connections, each authenticated (Whisker: its
// handshake answered; Kitten-MQ: its socket registered and its key sent), for the broker-RSS row.
// All connections of a process share one client name and key pair, created by the first.
// Reports ready with how many connected, then waits for {type: 'close'}.
import { createRequire } from 'node:module';
import { client } from '../dist/index.js';
import { onConfig, report, withTimeout } from './lib.mjs';

const CONCURRENCY = 100; // handshakes in progress at once

onConfig(async ({ system, hosts, clientId, keysDirectory, count }) => {
  const kitten = system === 'kitten' ? createRequire(import.meta.url)('kitten-mq') : null;
  const clients = [];
  let connected = 0;
  let firstError = null;
  const open = async () => {
    try {
      if (kitten) {
        const c = kitten.client();
        clients.push(c);
        await withTimeout(new Promise((resolve) => c.connect({ hosts, clientId, keysDirectory, keysName: 'client' }, resolve)), 30_000, 'connect');
      } else {
        const c = client();
        c.on('error', () => {});
        clients.push(c);
        await withTimeout(c.connect({ hosts, clientId, keysDirectory, connectTimeout: 30_000 }), 35_000, 'connect');
      }
      connected++;
    } catch (error) {
      firstError ??= `${error.code ?? ''} ${error.message}`;
    }
  };
  await open(); // creates the key pair
  let next = 1;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) {
        next++;
        await open();
      }
    }),
  );
  await report({ type: 'ready', connected, firstError });
  process.on('message', async (m) => {
    if (m?.type !== 'close') return;
    process.exit(0); // the sockets close with the process
  });
});
