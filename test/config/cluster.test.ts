import { describe, expect, test } from 'vitest';
import { buildConfig } from '../../src/config/load.js';

/** the `cluster` block as load() checks and completes it (SPEC §13, docs/configuration.md) */
const election = { etcd: { hosts: ['http://127.0.0.1:2379'] }, prefix: '/whisker/set-a' };
const cluster = { prefix: '/whisker/cluster', set: 'a', advertise: '10.0.0.1:7780@b1' };

describe('cluster config', () => {
  test.each([
    [{ serviceId: 'b1', cluster }, 'cluster'],
    [{ serviceId: 'b1', election, cluster: { ...cluster, prefix: 'c' } }, 'cluster.prefix'],
    [{ serviceId: 'b1', election, cluster: { ...cluster, prefix: '/whisker/set-a' } }, 'cluster.prefix'],
    [{ serviceId: 'b1', election, cluster: { ...cluster, prefix: '/whisker/set-a/cluster' } }, 'cluster.prefix'],
    [{ serviceId: 'b1', election, cluster: { ...cluster, set: 'a/b' } }, 'cluster.set'],
    [{ serviceId: 'b1', election, cluster: { prefix: '/c', set: 'a' } }, 'cluster.advertise'],
    [{ serviceId: 'b1', election, cluster: { ...cluster, advertise: '10.0.0.1:7780@b1#secret' } }, 'cluster.advertise'],
    [{ serviceId: 'b1', election, cluster: { ...cluster, advertise: '10.0.0.1:7780@b2' } }, 'cluster.advertise'],
    [{ serviceId: 'b1', election, cluster: { ...cluster, weight: 0 } }, 'cluster.weight'],
    [{ serviceId: 'b1', election, cluster: { ...cluster, sets: 2 } }, 'cluster.sets'],
    [{ serviceId: 'b1', channels: { 'a/1': { set: 'a' } } }, 'channels.a/1.set'],
    [{ serviceId: 'b1', election, cluster, channels: { 'a/1': { set: '' } } }, 'channels.a/1.set'],
    [{ serviceId: 'b1', election, cluster, limits: { maxPlacements: 0 } }, 'limits.maxPlacements'],
  ])('%j is refused naming %s', (raw, key) => {
    expect(() => buildConfig(raw, '/tmp', null)).toThrow(expect.objectContaining({ key }) as Error);
  });

  test('defaults: weight 1, 10,000 placements; a pin kept on its channel', () => {
    const config = buildConfig({ serviceId: 'b1', election, cluster, channels: { 'a/1': { set: 'b' } } }, '/etc/whisker', null);
    expect(config.cluster).toEqual({ ...cluster, weight: 1 });
    expect(config.limits.maxPlacements).toBe(10_000);
    expect(config.channels['a/1']?.set).toBe('b');
  });

  test('without the block: no cluster', () => {
    expect(buildConfig({}, '/tmp', null).cluster).toBeUndefined();
  });
});
