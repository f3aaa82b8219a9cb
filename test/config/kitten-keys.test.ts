import { describe, expect, test } from 'vitest';
import { buildConfig, ConfigError } from '../../src/config/load.js';
import { tempDir } from '../support/harness.js';

/** issue #16: a Kitten-MQ broker config's keys load on Whisker (the operator habits: test/cli/kitten.test.ts) */
describe('Kitten-MQ config keys', () => {
  test('keys with no meaning here are accepted and listed for the warning; other unknown keys are still refused', () => {
    const dir = tempDir();
    const config = buildConfig(
      {
        serverId: 'mybroker-service-1',
        logsDirectory: '/var/www/kitten-mq/logs',
        isManagementInterface: true,
        socketServer: { port: 0, host: 'localhost', logs: '/var/www/kitten-mq/packets', packetsFilename: 'broker.log', token: null },
        logLevel: 'silent',
      },
      dir,
      null,
    );
    expect(config.ignoredKeys).toEqual(['logsDirectory', 'isManagementInterface', 'socketServer.logs', 'socketServer.packetsFilename', 'socketServer.token (null)']);
    // issue 29: Kitten's README spells serviceId serverId
    expect(config.serviceId).toBe('mybroker-service-1');
    expect(config.renamedKeys).toEqual(['serverId']);
    expect(config.socketServer.token).toBeUndefined();
    expect(() => buildConfig({ logsDirectoryy: 'x' }, dir, null)).toThrow(ConfigError);
  });
});
