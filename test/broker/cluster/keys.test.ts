import { describe, expect, test } from 'vitest';
import { whisker } from '../../support/broker-process.js';
import { clusterBroker, clusterSpec, elected } from '../../support/cluster.js';
import { startEtcd } from '../../support/etcd.js';
import { until } from '../../support/harness.js';
import type { WhiskerError } from '../../../src/protocol/errors.js';
import { freshKeys, reasonOf, tryConnect } from '../../support/key-clients.js';

/** a real etcd and two sets of one broker each, both elected and registered */
async function twoSets() {
  const etcd = await startEtcd();
  const spec = clusterSpec(etcd.url);
  const a = await clusterBroker(spec, 'a', 'a1');
  const b = await clusterBroker(spec, 'b', 'b1');
  await Promise.all([elected(a), elected(b)]);
  await until(() => a.cluster!.sets.length === 2, 10_000, 'both sets registered');
  return { a, b };
}

/** key bindings are one per cluster (SPEC §4, §13): create-if-absent in etcd */
describe('cluster key bindings', () => {
  test('a name bound on set a cannot be taken with another key on set b; revoked on a, the new key is accepted', async () => {
    const { a, b } = await twoSets();

    const owner = await tryConnect('payroll', [a.hostSpec], freshKeys('payroll'));
    expect(owner.error).toBeNull();
    const stranger = freshKeys('payroll');
    const thief = await tryConnect('payroll', [b.hostSpec], stranger);
    expect(thief.error?.code).toBe('E_AUTH');
    expect(reasonOf(thief.error)).toBe('other-key');
    await Promise.all([owner.client.disconnect(), thief.client.disconnect()]);

    // the owner's key revoked on set a: the binding in etcd goes with it, another key may take the name
    const revoked = await whisker(['keys', 'revoke', 'payroll', '--socket', a.controlSocketPath!]);
    expect(revoked.code).toBe(0);
    await expect.poll(async () => {
      const again = await tryConnect('payroll', [b.hostSpec], stranger);
      await again.client.disconnect();
      return again.error?.code ?? null;
    }, { timeout: 5_000, interval: 300 }).toBeNull();
  }, 60_000);

  test('revoked on set a: the client connected to set b is closed and refused there too; the name registers anew with a new key', async () => {
    const { a, b } = await twoSets();

    const keys = freshKeys('ledger');
    const onA = await tryConnect('ledger', [a.hostSpec], keys);
    const onB = await tryConnect('ledger', [b.hostSpec], keys);
    expect([onA.error, onB.error]).toEqual([null, null]);
    const errors: WhiskerError[] = [];
    onB.client.on('error', (e: WhiskerError) => void errors.push(e));

    const revoked = await whisker(['keys', 'revoke', 'ledger', '--socket', a.controlSocketPath!]);
    expect(revoked.code).toBe(0);
    // set b applies the revocation from the binding's deletion in etcd: its session of that key is closed
    await until(() => !onB.client.isConnected() && errors.length >= 1, 10_000, 'closed by set b');
    expect(errors.map(reasonOf)).toEqual(['revoked']);
    const again = await tryConnect('ledger', [b.hostSpec], keys);
    expect(again.error?.code).toBe('E_AUTH');
    expect(reasonOf(again.error)).toBe('revoked');

    // a new key takes the name, on either set
    const renewed = freshKeys('ledger');
    const newOnB = await tryConnect('ledger', [b.hostSpec], renewed);
    const newOnA = await tryConnect('ledger', [a.hostSpec], renewed);
    expect([newOnB.error, newOnA.error]).toEqual([null, null]);
    await Promise.all([onA, onB, again, newOnA, newOnB].map(({ client }) => client.disconnect()));
  }, 60_000);
});
