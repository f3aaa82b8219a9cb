import '../support/uncaught.js'; // first: an unhandled rejection fails the test
import { describe, expect, test } from 'vitest';
import { Connection } from '../../src/link/connection.js';
import { parseHost } from '../../src/link/hosts.js';
import { loadOrCreateKeys } from '../../src/link/keys.js';
import type { BrokerFrame, ReplyFrame } from '../../src/protocol/frames.js';
import { broker, tempDir, until } from '../support/harness.js';

/**
 * A slave stops reading its master's link while its backlog is past limits.maxMirrorBacklogBytes
 * (src/broker/mirror/peer-link.ts): the link stays up however long that lasts (its heartbeat
 * blames nobody for the silence it chose), and reads what waited once resumed.
 */
describe('Connection.pauseReading', () => {
  test('paused four heartbeat timeouts: still up, the frames sent meanwhile read after resume, the heartbeat still works', async () => {
    const b = await broker({ heartbeatTimeout: 5 });
    const downs: string[] = [];
    const frames: BrokerFrame[] = [];
    const connection = new Connection(parseHost(b.hostSpec), {
      clientId: 'pauser',
      keys: loadOrCreateKeys(tempDir(), 'client'),
      tls: undefined,
      heartbeatTimeoutMs: 300,
      reconnect: { initialMs: 50, maxMs: 200, factor: 1.5 },
      onReady: () => undefined,
      onDown: (_c, error) => void downs.push(error?.code ?? 'lost'),
      onFrame: (_c, frame) => void frames.push(frame),
    });
    connection.start();
    await until(() => connection.isReady, 5_000, 'ready');
    connection.pauseReading();
    const replies: Array<ReplyFrame | null> = [];
    connection.request((req) => ({ type: 'subscribe', req, sub: 1, mode: 'listen', endpoint: 'p', version: 'v1', ids: ['1'] }), (reply) => void replies.push(reply));
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(downs).toEqual([]);
    expect(connection.isReady).toBe(true);
    expect(replies).toEqual([]); // sent by the broker, not read yet
    connection.resumeReading();
    await until(() => replies.length === 1, 2_000, 'the reply read after resume');
    expect(replies[0]?.error).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(downs).toEqual([]);
    await connection.close();
  });
});
