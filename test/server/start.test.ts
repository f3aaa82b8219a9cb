import { createServer } from 'node:net';
import { describe, expect, test } from 'vitest';
import { startBroker } from '../../src/server/start.js';
import { brokerConfig, freePort, tempDir } from '../support/harness.js';

/**
 * src/server/start.ts: a broker with its control socket and management HTTP (SPEC §10). Both
 * are claimed before the broker's parts start; a start that fails after that gives them back.
 */
describe('startBroker', () => {
  test('a start refused after the control socket and the management port were claimed releases both: the next start on that directory and port runs', async () => {
    const dir = tempDir();
    const managementPort = await freePort();
    // the WebSocket port is taken: the broker's parts fail after start.ts claimed its own
    const taken = createServer();
    const socketPort = await freePort();
    await new Promise<void>((resolve) => taken.listen(socketPort, '127.0.0.1', resolve));
    try {
      const refused = startBroker(brokerConfig({ socketServer: { port: socketPort, host: '127.0.0.1' }, management: { port: managementPort, host: '127.0.0.1' } }, dir));
      await expect(refused).rejects.toThrow(/in use/);
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
    const broker = await startBroker(brokerConfig({ management: { port: managementPort, host: '127.0.0.1' } }, dir));
    try {
      expect(broker.managementPort).toBe(managementPort);
      expect(broker.controlSocketPath).not.toBeNull();
      expect((await fetch(`http://127.0.0.1:${managementPort}/health`)).status).toBe(200);
    } finally {
      await broker.stop();
    }
  });
});
