import '../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { createServer } from 'node:net';
import { describe, expect, test } from 'vitest';
import { startBroker } from '../../src/server/start.js';
import { brokerConfig, connect, freePort, once, tempDir, until } from '../support/harness.js';

/**
 * issue #29 item 9 (SPEC §3, `reconnect`): a broker that comes back is reached within ~2 s of
 * accepting again, even after the client's back-off grew during a long outage (with the
 * default reconnect settings the next attempt was 5-11 s away after 18 s down).
 */
describe('a broker that comes back', () => {
  test('down 18 s, restarted on the same port: the client is connected again within 3 s of it listening', async () => {
    const port = await freePort();
    const dir = tempDir();
    const first = await startBroker(brokerConfig({ socketServer: { port } }, dir));
    const c = await connect('app', `127.0.0.1:${port}@whisker`, { reconnect: { initialMs: 200, maxMs: 20_000, factor: 1.5 } });
    const lost = once(c, 'disconnect');
    await first.stop();
    await lost;
    const downSince = Date.now();
    // while it is down, a socket that closes every connection counts the client's dials; the
    // broker comes back just after the first dial past 18 s, when the old back-off waited longest
    let dials = 0;
    const counter = createServer((socket) => ((dials += 1), socket.destroy()));
    await new Promise<void>((resolve) => counter.listen(port, '127.0.0.1', resolve));
    await until(() => Date.now() - downSince > 18_000, 20_000, '18 s down');
    const before = dials;
    await until(() => dials > before, 25_000, 'a dial past 18 s');
    await new Promise((resolve) => counter.close(resolve));
    const back = once(c, 'reconnect');
    const second = await startBroker(brokerConfig({ socketServer: { port } }, dir));
    try {
      const listening = Date.now();
      await Promise.race([back, new Promise((_, reject) => setTimeout(() => reject(new Error('not back within 6 s')), 6_000))]);
      const ms = Date.now() - listening;
      console.log(`client back ${ms} ms after the broker listened again`);
      expect(ms).toBeLessThan(3_000);
      expect(c.isConnected()).toBe(true);
    } finally {
      await c.disconnect();
      await second.stop();
    }
  }, 60_000);
});
