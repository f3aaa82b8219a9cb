import '../../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';
import { afterEach, expect, test } from 'vitest';
import { startProcess, writeConfig } from '../../support/broker-process.js';
import { connect, tempDir } from '../../support/harness.js';

/**
 * A client whose handshake the broker timed out (E_AUTH `Handshake timeout`: a swamped broker, a
 * crowd of 500 at once on a loaded machine) was refused for time, not for its key: like a budget
 * refusal it redials until connectTimeout (docs/client.md#connect). Found by an outside check: 344
 * of 500 new names failed connect() at ~10 s with a connectTimeout of 20 s. A TCP relay holds
 * the first connection's frames after its upgrade for 6 s, past the broker's 5 s.
 */
const servers: Server[] = [];
const sockets: Socket[] = [];

afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const server of servers.splice(0)) server.close();
});

/** relays to `port`; the first connection's client bytes after its first chunk wait `holdMs` */
async function slowFirstRelay(port: number, holdMs: number): Promise<number> {
  let connections = 0;
  const server = createServer((inbound) => {
    const first = connections++ === 0;
    const outbound = tcpConnect(port, '127.0.0.1');
    sockets.push(inbound, outbound);
    let chunks = 0;
    inbound.on('data', (chunk) => {
      if (first && chunks++ > 0) setTimeout(() => outbound.writable && outbound.write(chunk), holdMs);
      else outbound.write(chunk);
    });
    outbound.on('data', (chunk) => inbound.writable && inbound.write(chunk));
    inbound.on('close', () => outbound.destroy());
    outbound.on('close', () => inbound.destroy());
    inbound.on('error', () => {});
    outbound.on('error', () => {});
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no relay port');
  return address.port;
}

test('a handshake the broker timed out is redialled: connect() succeeds within connectTimeout', async () => {
  const broker = await startProcess(writeConfig(tempDir(), { serviceId: 'slowhs', socketServer: { port: 0 } }));
  const port = Number(/:(\d+)@/.exec(broker.hostSpec)![1]);
  const relay = await slowFirstRelay(port, 6000);
  const started = performance.now();
  const client = await connect('slow-handshake', `127.0.0.1:${relay}@slowhs`, { connectTimeout: 15_000 });
  expect(client.isConnected()).toBe(true);
  // the first attempt was held past the broker's 5 s, then the client came back
  expect(performance.now() - started).toBeGreaterThan(5000);
  await client.disconnect();
}, 30_000);
