import '../support/uncaught.js'; // first: an unhandled rejection from connect() fails the test
import { describe, expect, test } from 'vitest';
import type { SendInfo } from '../../src/client/types.js';
import type { WhiskerError } from '../../src/protocol/errors.js';
import { clientConfig, unconnected } from '../support/harness.js';
import { freePort } from '../support/ports.js';

type Failed = WhiskerError & { info?: SendInfo };

/**
 * docs/client.md#send: a failed send's error carries its own `info` (`err.info`: messageId,
 * channel, storedBy), in the callback form as in the promise form. Sends failed together (a
 * disconnect, every broker refusing the key) each get their own error: one error object shared
 * by all of them had `err.info` of the last one (issue 27, atk27c B2 read `err.info.storedBy`
 * in a callback and found it empty).
 */
describe('a failed send says which send it was', () => {
  test('sends failed together by disconnect(): each error names its own messageId, callback and promise alike', async () => {
    const client = unconnected();
    const nowhere = `127.0.0.1:${await freePort()}@nobody`;
    void client.connect(clientConfig('info-check', nowhere, { connectTimeout: 60_000 })).catch(() => undefined);
    const promised = [0, 1, 2].map((i) => client.send('orders/v1/1', { i }).then(() => null, (e: Failed) => e));
    const called = [0, 1].map((i) => new Promise<{ err: Failed | null; info: SendInfo }>((resolve) => client.send('orders/v1/2', { i }, (err, _r, info) => resolve({ err: err as Failed | null, info }))));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await client.disconnect();
    const rejected = await Promise.all(promised);
    for (const err of rejected) expect(err).toMatchObject({ code: 'E_DISCONNECTED' });
    const ids = rejected.map((err) => err!.info!.messageId);
    expect(new Set(ids).size).toBe(3);
    for (const { err, info } of await Promise.all(called)) {
      expect(err).toMatchObject({ code: 'E_DISCONNECTED' });
      expect(err!.info?.messageId).toBe(info.messageId);
      expect(err!.info?.channel).toEqual({ endpoint: 'orders', version: 'v1', id: '2' });
    }
  });
});
