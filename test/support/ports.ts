import { createServer } from 'node:net';

/**
 * A port for a broker the test starts later (a process, or one restarted on the same port).
 * Port 0 would hand out a port from the kernel's ephemeral range (32768-60999 here), which every
 * outgoing connection of every test worker also draws from: between this check and the broker's
 * bind, a client socket could take it (EADDRINUSE in CI). So ports come from below that range,
 * from a slice of its own for each vitest worker, in turn, each checked bindable first.
 */
const PORT_FLOOR = 20_000;
const PORT_SLICE = 1_500;
// WHISKER_TEST_PORT_SLICE: a second vitest process run beside the suite by hand
const worker = Number(process.env.WHISKER_TEST_PORT_SLICE ?? process.env.VITEST_POOL_ID ?? process.env.VITEST_WORKER_ID ?? 0) % 8;
let nextInSlice = Math.floor(Math.random() * PORT_SLICE);

export async function freePort(): Promise<number> {
  for (let tries = 0; tries < PORT_SLICE; tries++) {
    const port = PORT_FLOOR + worker * PORT_SLICE + (nextInSlice++ % PORT_SLICE);
    if (await bindable(port)) return port;
  }
  throw new Error(`freePort: no free port in ${PORT_FLOOR + worker * PORT_SLICE}..${PORT_FLOOR + (worker + 1) * PORT_SLICE - 1}`);
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
