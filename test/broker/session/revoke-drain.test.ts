import { describe, expect, test } from 'vitest';
import { broker, connect, until } from '../../support/harness.js';
import { GatedStore } from '../../support/gated-store.js';

/**
 * A key revoked while the store is still writing that client's sends (docs/client.md#keys,
 * docs/protocol.md#handshake "Revocation"): the broker reads nothing more from the connection,
 * answers those sends once the store has, then sends the E_AUTH. A send the master stored is
 * answered as stored; one failed with E_AUTH (no `storedBy`) was not stored. Before: the broker
 * waited 2 s at most, then closed; at load 15-25 the store took longer than that with a
 * pipelining client (keys-revoke-sends.test.ts: 1,000 to 4,000 sends failed E_AUTH, no
 * `storedBy`, stored and delivered), and here a store that answers 2.5 s later does the same.
 */
describe('a key revoked while its sends are being stored', () => {
  test('a send whose append ends 2.5 s after the revocation is answered as stored, not E_AUTH', async () => {
    const store = new GatedStore();
    const b = await broker({ serviceId: 'solo' }, { store });
    const got: number[] = [];
    const listener = await connect('drain-listener', b.hostSpec);
    await listener.listen('orders/v1/1', (err, msg) => void (!err && got.push((msg as { n: number }).n))).ready;
    const sender = await connect('drain-sender', b.hostSpec);
    sender.on('error', () => {});
    store.gated = true;
    const outcome = sender.send('orders/v1/1', { n: 1 }).then(
      () => 'ok',
      (error: { code: string; info?: { storedBy?: string[] } }) => `${error.code} storedBy=${JSON.stringify(error.info?.storedBy ?? [])}`,
    );
    await until(() => store.gate.length === 1, 5000, 'the append under way');
    const revoked = await b.revokeKey('drain-sender');
    expect(revoked?.closedConnections).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    store.gated = false;
    for (const release of store.gate.splice(0)) release();
    await until(() => got.length === 1, 5000, 'the delivery');
    // stored and delivered: its sender must be told so
    expect(await outcome).toBe('ok');
    // and the connection ends with the revocation: a send made now is refused, never stored
    await expect(sender.send('orders/v1/1', { n: 2 })).rejects.toMatchObject({ code: 'E_AUTH' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(got).toEqual([1]);
  }, 20_000);
});
