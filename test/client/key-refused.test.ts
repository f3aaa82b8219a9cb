import '../support/uncaught.js'; // first: an unhandled rejection from connect() fails the test
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { WhiskerError } from '../../src/protocol/errors.js';
import { broker, clientConfig, unconnected, until } from '../support/harness.js';

/**
 * Issue 28 item 4 (SPEC §4): a broker that refuses the key itself (`other-key`, `revoked`) is not
 * dialed again before `reconnect.authRetryMs` or a new connect(); the refusal says why, once,
 * and sends fail with E_AUTH at once instead of waiting for a master.
 */
describe('a refused key stops being retried', () => {
  async function rebuiltClient(extra: Record<string, unknown> = {}) {
    const b = await broker({ logLevel: 'silent' });
    const first = unconnected();
    await first.connect(clientConfig('billing', b.hostSpec));
    await first.disconnect();
    const client = unconnected();
    const errors: WhiskerError[] = [];
    client.on('error', (e: WhiskerError) => void errors.push(e));
    const keysDirectory = mkdtempSync(join(tmpdir(), 'whisker-rebuilt-')); // a fresh container: a new key
    const config = { ...clientConfig('billing', b.hostSpec), keysDirectory, sendTimeout: 5000, reconnect: { initialMs: 20, maxMs: 50, ...extra } };
    const pending = client.send('orders/v1/1', { early: true }).then(() => null, (e: WhiskerError) => e);
    const connected = await client.connect(config).then(() => null, (e: WhiskerError) => e);
    return { b, client, config, errors, pending, connected };
  }

  test('other-key: one error with the reason, no redial within a second, pending and new sends fail with E_AUTH', async () => {
    const { b, client, errors, pending, connected } = await rebuiltClient();
    expect(connected).toMatchObject({ code: 'E_AUTH', details: { reason: 'other-key' } });
    expect(connected!.message).toMatch(/whisker keys revoke/);
    expect(connected!.message).toMatch(/authRetryMs/);
    const early = await pending;
    expect(early).toMatchObject({ code: 'E_AUTH', details: { reason: 'other-key' } });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    // reconnect.maxMs is 50 ms: without the hold the broker would be dialed ~20 times
    expect(errors).toHaveLength(1);
    expect([...b.sessions].length).toBe(0);
    const started = Date.now();
    const late = await client.send('orders/v1/1', { late: true }).then(() => null, (e: WhiskerError) => e);
    expect(late).toMatchObject({ code: 'E_AUTH', details: { reason: 'other-key' } });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  test('other-key: a subscription\'s ready rejects and a replay throws with that E_AUTH, at once (issue 27, outside check b6)', async () => {
    const { client } = await rebuiltClient();
    const started = Date.now();
    const handlerErrors: WhiskerError[] = [];
    const handle = client.listen('orders/v1/1', (err) => void (err && handlerErrors.push(err)));
    const ready = await handle.ready.then(() => null, (e: WhiskerError) => e);
    expect(ready).toMatchObject({ code: 'E_AUTH', details: { reason: 'other-key' } });
    expect(handlerErrors.map((e) => e.code)).toEqual(['E_AUTH']);
    const replayed = await (async () => {
      for await (const _ of client.replay('orders/v1/1', {})) void _;
      return null;
    })().catch((e: WhiskerError) => e);
    expect(replayed).toMatchObject({ code: 'E_AUTH', details: { reason: 'other-key' } });
    expect(Date.now() - started).toBeLessThan(1000); // not after sendTimeout (5 s)
  });

  test('dialed again after reconnect.authRetryMs, and at once by connect()', async () => {
    const { client, config, errors } = await rebuiltClient({ authRetryMs: 400 });
    expect(errors).toHaveLength(1);
    await until(() => errors.length === 2, 3000, 'a second attempt after authRetryMs');
    const again = Date.now();
    await client.connect(config).catch(() => undefined);
    await until(() => errors.length === 3, 300, 'connect() dials at once');
    expect(Date.now() - again).toBeLessThan(300);
  });
});
