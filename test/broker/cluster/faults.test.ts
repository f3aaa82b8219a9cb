import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { decodeBrokerFrame, decodeClientFrame } from '../../../src/protocol/frames.js';
import { clusterBroker, clusterSpec, elected } from '../../support/cluster.js';
import { clusterProcesses } from '../../support/cluster-processes.js';
import { startEtcd } from '../../support/etcd.js';
import { clientConfig, connect, freePort, tempDir, until } from '../../support/harness.js';

/** a cluster's faults (SPEC §13, issue 31): etcd out of reach, hostile map frames */
describe('cluster faults', () => {
  test('etcd unreachable: a queue not placed yet is E_NO_PLACEMENT at once; a placed one is still stored (storedBy)', async () => {
    const etcd = await startEtcd();
    const spec = clusterSpec(etcd.url);
    const a = await clusterBroker(spec, 'a', 'a1');
    await elected(a);
    await until(() => a.cluster!.sets.length === 1, 10_000, 'set registered');
    const c = await connect('etcd-outage', a.hostSpec, { sendTimeout: 8_000 });
    await c.send('placed/v1/x', { n: 0 });
    await etcd.kill();
    await until(() => !a.isMaster, 15_000, 'the master fenced without etcd');

    const startedAt = performance.now();
    const fresh = await c.send('fresh/v1/x', { n: 1 }).then(() => null, (error: { code: string }) => error);
    expect(fresh?.code).toBe('E_NO_PLACEMENT');
    expect(performance.now() - startedAt).toBeLessThan(8_000); // answered, not left to sendTimeout
    expect(a.queues.has('fresh/v1')).toBe(false);

    const placed = await c.send('placed/v1/x', { n: 2 }).then(() => null, (error: { code: string; info: { storedBy?: string[] } }) => error);
    expect(placed?.code).toBe('E_NO_MASTER');
    expect(placed?.info.storedBy).toEqual(['a1']);
    expect(a.queues.get('placed/v1')!.depth).toBe(2);
    await c.disconnect();
  }, 60_000);

  test('etcd unreachable since start: a send and a subscribe to a queue not placed are E_NO_PLACEMENT once, not a hang', async () => {
    const etcdUrl = `http://127.0.0.1:${await freePort()}`; // nothing listens there
    const config = clientConfig('etcd-never', [], { sendTimeout: 20_000 });
    const registered = tempDir(); // a name this set knows already: no key binding to make in etcd
    copyFileSync(join(config.keysDirectory!, 'client.pub'), join(registered, 'etcd-never.pub'));
    const nodes = (await clusterProcesses(etcdUrl, { a: ['a1', 'a2'] }, () => ({ registeredClientsPath: registered }))).get('a')!;
    const c = await connect('etcd-never', nodes.map((n) => n.spec), { sendTimeout: 20_000 });
    const sent = await c.send('fresh/v1/x', { n: 1 }).then(() => null, (error: { code: string }) => error);
    expect(sent?.code).toBe('E_NO_PLACEMENT');

    // both brokers of the set refuse it (neither is master): the handler hears it once
    const refusals: string[] = [];
    const handle = c.consume('fresh2/v1/*', (err) => void (err && refusals.push(err.code)));
    const ready = await Promise.race([handle.ready.then(() => 'ready', (error: { code: string }) => error.code), new Promise((resolve) => setTimeout(resolve, 10_000, 'no answer in 10 s'))]);
    expect(ready).toBe('E_NO_PLACEMENT');
    await new Promise((resolve) => setTimeout(resolve, 500)); // the other broker's answer too
    expect(refusals).toEqual(['E_NO_PLACEMENT']);

    // an id added to a listen that had none: its queue is placed then, so it is refused then
    const later = c.listen({ endpoint: 'later', version: 'v1', ids: [] }, () => {});
    const added = await Promise.race([later.addId('x').then(() => 'added', (error: { code: string }) => error.code), new Promise((resolve) => setTimeout(resolve, 10_000, 'no answer in 10 s'))]);
    expect(added).toBe('E_NO_PLACEMENT');
    await c.disconnect();
  }, 60_000);

  test.each([
    ['a set name with a slash', { type: 'cluster', set: 'a/b', full: true, placed: [], removed: [] }],
    ['a host with a token', { type: 'cluster', set: 'a', full: true, sets: [{ name: 'b', hosts: ['h:1@b#secret'] }], placed: [], removed: [] }],
    ['a bad queue', { type: 'cluster', set: 'a', full: false, placed: [['*/v1', 'b']], removed: [] }],
    ['a placement of three', { type: 'cluster', set: 'a', full: false, placed: [['q/v1', 'b', 'c']], removed: [] }],
    ['too many hosts', { type: 'cluster', set: 'a', full: false, sets: [{ name: 'b', hosts: Array.from({ length: 101 }, (_, i) => `h:${i}`) }], placed: [], removed: [] }],
    ['no full flag', { type: 'cluster', set: 'a', placed: [], removed: [] }],
    ['placed not an array', { type: 'cluster', set: 'a', full: true, placed: { 'q/v1': 'b' }, removed: [] }],
  ])('a cluster frame with %s is E_PROTOCOL for the client', (_, frame) => {
    expect(() => decodeBrokerFrame(JSON.stringify(frame))).toThrow(expect.objectContaining({ code: 'E_PROTOCOL' }) as Error);
  });

  test('a cluster frame from a client is E_PROTOCOL for the broker', () => {
    expect(() => decodeClientFrame(JSON.stringify({ type: 'cluster', set: 'a', full: true, placed: [], removed: [] }))).toThrow(expect.objectContaining({ code: 'E_PROTOCOL' }) as Error);
    expect(decodeBrokerFrame(JSON.stringify({ type: 'cluster', set: 'a', full: true, sets: [{ name: 'b', hosts: ['127.0.0.1:1@b1'] }], placed: [['q/v1', 'b']], removed: [] }))).toMatchObject({ set: 'a', placed: [['q/v1', 'b']] });
  });
});
