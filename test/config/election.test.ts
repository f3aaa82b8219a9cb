import { describe, expect, test } from 'vitest';
import { buildConfig } from '../../src/config/load.js';

/** the `election` block as load() checks and completes it (docs/configuration.md, docs/operations.md#automatic-failover) */
describe('election config', () => {
  test.each([
    [{ election: { prefix: '/w' } }, 'election.etcd'],
    [{ election: { etcd: { hosts: [] }, prefix: '/w' } }, 'election.etcd.hosts'],
    [{ election: { etcd: { hosts: ['127.0.0.1:2379'] }, prefix: '/w' } }, 'election.etcd.hosts.0'],
    [{ election: { etcd: { hosts: ['http://127.0.0.1:2379'] }, prefix: 'w' } }, 'election.prefix'],
    [{ election: { etcd: { hosts: ['http://127.0.0.1:2379'] }, prefix: '/w', leaseTtl: 1 } }, 'election.leaseTtl'],
    [{ election: { etcd: { hosts: ['http://127.0.0.1:2379'] }, prefix: '/w', ttl: 5 } }, 'election.ttl'],
  ])('%j is refused naming %s', (raw, key) => {
    expect(() => buildConfig(raw, '/tmp', null)).toThrow(expect.objectContaining({ key }) as Error);
  });

  test('defaults: a 10 s lease; TLS paths resolved against the file', () => {
    const config = buildConfig({ election: { etcd: { hosts: ['https://10.0.0.1:2379'], tls: { ca: 'ca.pem' } }, prefix: '/whisker/prod' } }, '/etc/whisker', null);
    expect(config.election).toEqual({ etcd: { hosts: ['https://10.0.0.1:2379'], tls: { ca: '/etc/whisker/ca.pem' } }, prefix: '/whisker/prod', leaseTtl: 10 });
  });
});
