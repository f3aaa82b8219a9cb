import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { WhiskerClient } from '../../../src/client/client.js';
import type { ChannelString } from '../../../src/client/types.js';
import type { WhiskerError } from '../../../src/protocol/errors.js';
import { freePort, startProcess, whisker, writeConfig } from '../../support/broker-process.js';
import { type ElectedNode, electionCluster, nextMaster, offsets } from '../../support/election-cluster.js';
import { startEtcd } from '../../support/etcd.js';
import { connect, Inbox, tempDir } from '../../support/harness.js';

/**
 * SPEC §5 and §9 with real broker processes (issue 28 item 2): a reserved id stays its client
 * name's through a kill -9 restart of the master and through a failover (promotion by reload,
 * or by election).
 */
const rules = [{ client: '*', read: ['!room/v1/*'], write: ['room/v1/*'] }];

/** a broker of these tests: the same shape as the election cluster's */
type Node = ElectedNode;

async function nodes(serviceIds: readonly string[]): Promise<Node[]> {
  const made: Node[] = [];
  for (const serviceId of serviceIds) {
    const port = await freePort();
    const dir = tempDir(`whisker-reserve-${serviceId}-`);
    made.push({ serviceId, port, dir, spec: `127.0.0.1:${port}@${serviceId}`, configPath: join(dir, 'config.json'), process: null });
  }
  return made;
}

function configure(node: Node, all: readonly Node[], isMaster: boolean): string {
  return writeConfig(node.dir, {
    serviceId: node.serviceId,
    isMaster,
    peers: all.filter((other) => other !== node).map((other) => other.spec),
    socketServer: { host: '127.0.0.1', port: node.port },
    rules,
  });
}

/** waits until `whisker reservations list` on this broker shows `owner` holding `channel` (a slave: from its master) */
async function listed(configPath: string, channel: string, owner: string, timeoutMs = 10_000): Promise<void> {
  const start = Date.now();
  let last = '';
  while (Date.now() - start < timeoutMs) {
    const result = await whisker(['reservations', 'list', '-c', configPath, '--json']);
    last = result.stdout + result.stderr;
    if (result.code === 0) {
      const { reservations } = JSON.parse(result.stdout) as { reservations: Array<{ channel: string; owner: string }> };
      if (reservations.some((r) => r.channel === channel && r.owner === owner)) return;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${configPath}: ${channel} not listed for ${owner}: ${last}`);
}

async function expectReserved(client: WhiskerClient, channel: ChannelString, ownerName: string): Promise<void> {
  const errors: WhiskerError[] = [];
  await expect(client.listen(channel, (err) => void (err && errors.push(err))).ready).rejects.toMatchObject({ code: 'E_FORBIDDEN', details: { channel, right: 'read', reason: 'reserved' } });
  expect(JSON.stringify(errors.map((e) => [e.message, e.details]))).not.toContain(ownerName);
}

describe('reservations across restarts and failovers (real broker processes)', () => {
  test('kill -9 of the master right after the subscribe was answered: the restarted broker still holds the id for the name', async () => {
    const [node] = await nodes(['solo']);
    node!.process = await startProcess(configure(node!, [node!], true));
    const owner = await connect('kept-owner', node!.spec);
    await owner.listen('room/v1/inv', () => {}).ready;
    node!.process.child.kill('SIGKILL');
    await node!.process.exited;
    node!.process = await startProcess(node!.configPath);
    const intruder = await connect('intruder', node!.spec);
    await expectReserved(intruder, 'room/v1/inv', 'kept-owner');
    // the owner's client reconnects and subscribes again: its messages reach it
    const inbox = new Inbox();
    await owner.disconnect();
    const back = await connect('kept-owner', node!.spec);
    await back.listen('room/v1/inv', inbox.listener).ready;
    await intruder.send('room/v1/inv', 'invoice 1');
    await inbox.waitFor(1);
  });

  test('failover by reload: the master is killed, the slave promoted keeps the reservation of a name with no instance running', async () => {
    const [a, b] = await nodes(['a', 'b']);
    const all = [a!, b!];
    a!.process = await startProcess(configure(a!, all, true));
    b!.process = await startProcess(configure(b!, all, false));
    await b!.process.waitFor(/in step with the master/);
    const hosts = all.map((n) => n.spec);
    const owner = await connect('failover-owner', hosts);
    await owner.listen('room/v1/9', () => {}).ready;
    await listed(b!.configPath, 'room/v1/9', 'failover-owner');
    await owner.disconnect(); // a rolling deploy under way: no instance of the name runs
    a!.process.child.kill('SIGKILL');
    await a!.process.exited;
    configure(b!, all, true);
    const reloaded = await whisker(['reload', '-c', b!.configPath]);
    expect(reloaded.code, reloaded.stderr).toBe(0);
    const intruder = await connect('intruder', [b!.spec]);
    await expectReserved(intruder, 'room/v1/9', 'failover-owner');
    const back = await connect('failover-owner', [b!.spec]);
    const inbox = new Inbox();
    await back.listen('room/v1/9', inbox.listener).ready;
    await intruder.send('room/v1/9', 'after the failover');
    await inbox.waitFor(1);
  }, 30_000);

  test('a subscription a slave refused (reserved) is refused, not ready, when that slave is promoted (attacks-28 a9)', async () => {
    const [a, b] = await nodes(['pa', 'pb']);
    const all = [a!, b!];
    a!.process = await startProcess(configure(a!, all, true));
    b!.process = await startProcess(configure(b!, all, false));
    await b!.process.waitFor(/in step with the master/);
    const owner = await connect('promo-owner', all.map((n) => n.spec));
    await owner.listen('room/v1/p', () => {}).ready;
    await listed(b!.configPath, 'room/v1/p', 'promo-owner');
    // a client that reaches only the slave: the slave refuses by its master's table; no master answers yet
    const intruder = await connect('promo-intruder', [b!.spec]);
    const errors: WhiskerError[] = [];
    const handle = intruder.listen('room/v1/p', (err) => void (err && errors.push(err)));
    let outcome: unknown = 'pending';
    handle.ready.then(() => (outcome = 'ready'), (error: WhiskerError) => (outcome = error));
    await new Promise((resolve) => setTimeout(resolve, 500));
    a!.process.child.kill('SIGKILL');
    await a!.process.exited;
    configure(b!, all, true);
    expect((await whisker(['reload', '-c', b!.configPath])).code).toBe(0);
    const start = Date.now();
    while (outcome === 'pending' && Date.now() - start < 10_000) await new Promise((resolve) => setTimeout(resolve, 50));
    // before the fix: `ready` resolved on the promotion's role frame, and nothing told the handler
    expect(outcome).toMatchObject({ code: 'E_FORBIDDEN', details: { channel: 'room/v1/p', right: 'read', reason: 'reserved' } });
    expect(errors.map((e) => e.details)).toContainEqual({ channel: 'room/v1/p', right: 'read', reason: 'reserved' });
    expect(JSON.stringify(errors.map((e) => [e.message, e.details]))).not.toContain('promo-owner');
    expect(handle.ids).toEqual([]);
  }, 30_000);

  test('failover by election: the elected master is killed, the next one keeps the reservation', async () => {
    const etcd = await startEtcd();
    const cluster = await electionCluster([etcd.url], ['a', 'b', 'c'], () => ({ rules }));
    const first = await nextMaster(cluster);
    await Promise.all(cluster.filter((n) => n !== first).map((n) => n.process!.waitFor(/in step with the master/, 0, 15_000)));
    const hosts = cluster.map((n) => n.spec);
    const owner = await connect('elected-owner', hosts);
    await owner.listen('room/v1/e', () => {}).ready;
    await Promise.all(cluster.map((node) => listed(node.configPath, 'room/v1/e', 'elected-owner')));
    await owner.disconnect();
    const from = offsets(cluster);
    first.process!.child.kill('SIGKILL');
    await first.process!.exited;
    const second = await nextMaster(cluster, from);
    expect(second).not.toBe(first);
    const intruder = await connect('intruder', [second.spec]);
    await expectReserved(intruder, 'room/v1/e', 'elected-owner');
    const back = await connect('elected-owner', [second.spec]);
    const inbox = new Inbox();
    await back.listen('room/v1/e', inbox.listener).ready;
    await intruder.send('room/v1/e', 'after the election');
    await inbox.waitFor(1);
  }, 60_000);
});
