import { describe, expect, test } from 'vitest';
import { whisker } from '../../support/broker-process.js';
import { clusterBroker, clusterSpec, elected } from '../../support/cluster.js';
import { startEtcd } from '../../support/etcd.js';
import { until } from '../../support/harness.js';
import { freshKeys, reasonOf, tryConnect } from '../../support/key-clients.js';

/** key bindings are one per cluster (SPEC §4, §13): create-if-absent in etcd */
describe('cluster key bindings', () => {
  test('a name bound on set a cannot be taken with another key on set b; revoked on a, the new key is accepted', async () => {
    const etcd = await startEtcd();
    const spec = clusterSpec(etcd.url);
    const a = await clusterBroker(spec, 'a', 'a1');
    const b = await clusterBroker(spec, 'b', 'b1');
    await Promise.all([elected(a), elected(b)]);
    await until(() => a.cluster!.sets.length === 2, 10_000, 'both sets registered');

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
});
