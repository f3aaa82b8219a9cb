import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, test } from 'vitest';
import { type BrokerProcess, startProcess, whisker, writeConfig } from '../../support/broker-process.js';
import { LEASE_TTL } from '../../support/election-cluster.js';
import { type EtcdProcess, startEtcd } from '../../support/etcd.js';
import { tempDir } from '../../support/harness.js';
import { Checker, startNetnsClient } from '../../support/netns-checker.js';
import { Network, type NetNode, unavailable } from '../../support/netns.js';

/**
 * Fencing (issue 14): the master cut off from etcd alone, in network namespaces made here
 * (test/support/netns.ts: packets dropped, no FIN, no RST). etcd, three brokers and a client
 * process each in their own namespace; the master keeps its links to the client and to its
 * peers. It must stop delivering before its lease can expire on etcd's side, and a new master
 * is elected once it has. Prints sent / lost / duplicated / time to the new master's first delivery.
 */
const why = unavailable();
if (why) console.warn(`election partition test skipped: ${why}`);

const HEARTBEAT_S = 2;
/** the client's consumer (netns-client.mjs): at most this many in flight, the duplicates' bound */
const PREFETCH = 10;
const PORT = 7780;

interface Node {
  readonly serviceId: string;
  readonly net: NetNode;
  readonly path: string;
  process: BrokerProcess;
}

/** the `time` of a broker's JSON log line, ms since the epoch */
const timeOf = (line: string): number => Date.parse((JSON.parse(line) as { time: string }).time);
const line = (msg: string) => new RegExp(`^.*"msg":"${msg}".*$`, 'm');
const ACTS_AS_MASTER = line('delivering: this broker acts as master');
const ACTS_AS_SLAVE = line('not delivering: this broker acts as slave');

async function held(node: Node): Promise<number> {
  const result = await whisker(['list', '-c', node.path, '--json']);
  const { queues } = JSON.parse(result.stdout) as { queues: Array<{ messages: number }> };
  return queues.reduce((sum, q) => sum + q.messages, 0);
}

describe.skipIf(why !== null)('the master cut off from etcd alone (network namespaces, real etcd, real processes)', () => {
  let network: Network | null = null;
  let etcd: EtcdProcess | null = null;
  const children: ChildProcess[] = [];
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await etcd?.kill();
    network?.destroy();
  });

  test('steps down before its lease can expire on etcd; a new master is elected and delivers; no delivery of the old epoch; 0 lost', async () => {
    network = new Network();
    const net = network;
    const ne = net.add('e');
    etcd = await startEtcd(ne);
    const nets = ['a', 'b', 'c'].map((id) => net.add(id));
    const spec = (n: NetNode) => `${n.address}:${PORT}@${n.name}`;
    const prefix = `/whisker/partition-${process.pid}`;
    const nodes: Node[] = await Promise.all(
      nets.map(async (n) => {
        const path = writeConfig(tempDir(`whisker-election-partition-${n.name}-`), {
          serviceId: n.name, peers: nets.filter((o) => o !== n).map(spec), socketServer: { host: n.address, port: PORT },
          heartbeatTimeout: HEARTBEAT_S, requeueInterval: 30, maxItemsInQueue: 1_000_000,
          election: { etcd: { hosts: [etcd!.url] }, prefix, leaseTtl: LEASE_TTL },
        });
        const process = await startProcess(path, { wrap: n.exec, startTimeoutMs: 30_000 });
        children.push(process.child);
        return { serviceId: n.name, net: n, path, process };
      }),
    );
    const firstMaster = async (among: Node[], from: Map<Node, number>): Promise<{ node: Node; at: number }> =>
      Promise.any(among.map(async (node) => ({ node, at: timeOf(await node.process.waitFor(ACTS_AS_MASTER, from.get(node) ?? 0, 20_000)) })));
    const offsets = () => new Map(nodes.map((n) => [n, n.process.output().length]));
    const { node: master } = await firstMaster(nodes, new Map());
    const others = nodes.filter((n) => n !== master);
    await Promise.all(others.map((n) => n.process.waitFor(/in step with the master/, 0, 20_000)));

    const checker = new Checker();
    const nk = net.add('k');
    const options = { hosts: nets.map(spec), keysDirectory: tempDir('whisker-election-partition-keys-'), heartbeatTimeout: HEARTBEAT_S * 1000, sendTimeout: 60_000, sendEveryMs: 5 };
    const client = await startNetnsClient(nk, options, checker);
    children.push(client.child);
    client.command('go cut');
    await checker.when(() => checker.gotEvents >= 200, 20_000, 'deliveries before the cut');

    // only the path between the master and etcd is cut: the client and the peers still reach it
    const from = offsets();
    const cutAt = Date.now();
    net.cut(master.serviceId, 'e');
    const stepDownLine = await master.process.waitFor(ACTS_AS_SLAVE, from.get(master), LEASE_TTL * 1000 + 10_000);
    const steppedDownMs = timeOf(stepDownLine) - cutAt;
    // the old master's own rate while cut off, as an operator reads it
    const oldMasterStat = whisker(['stat', '-c', master.path, '--json', '--count', '1', '--interval', String(2 * LEASE_TTL)]);
    const next = await firstMaster(others, from);
    const electedMs = next.at - cutAt;
    await checker.when(() => checker.gotAt.some((at) => at > next.at), 15_000, 'a delivery from the new master');
    const firstDeliveryMs = checker.gotAt.find((at) => at > next.at)! - cutAt;
    // nothing reached the client between the old master's step-down and the new master's election
    // (frames already on the wire at the step-down may land within 300 ms)
    const deliveredBetween = checker.gotAt.filter((at) => at > timeOf(stepDownLine) + 300 && at < next.at).length;
    const stat = await oldMasterStat;
    expect(stat.code, stat.stderr).toBe(0);
    const oldMasterOutPerS = (JSON.parse(stat.stdout.trim().split('\n').pop()!) as { out: number }).out;

    // healed: the old master comes back as a slave of the new one; traffic goes on
    net.heal(master.serviceId, 'e');
    await master.process.waitFor(/in step with the master/, from.get(master), 20_000);
    const mark = checker.gotEvents;
    await checker.when(() => checker.gotEvents >= mark + 200, 20_000, 'deliveries after the heal');
    const settledBefore = checker.settled;
    client.command('stop');
    await checker.when(() => checker.settled > settledBefore, 70_000, 'every send answered');
    const okSeqs = [...checker.ok];
    await checker.when(() => okSeqs.every((seq) => checker.got.has(seq)), 30_000, 'every answered send delivered').catch(() => undefined);
    await expect.poll(async () => (await Promise.all(nodes.map(held))).every((n) => n === 0), { timeout: 20_000, interval: 250 }).toBe(true);
    const f = checker.figures('cut', true);
    console.log(
      `election master cut off from etcd: sent ${f.sent}, ok ${f.ok}, failed ${f.failed}, lost ${f.lost}, duplicated ${f.duplicated} (window ${PREFETCH}), unexpected ${f.unexpected}, ` +
        `${checker.stale} old-epoch frames ignored by the client; cut to ${master.serviceId}'s step-down ${steppedDownMs} ms (lease ${LEASE_TTL * 1000} ms), ` +
        `to ${next.node.serviceId} elected ${electedMs} ms, to its first delivery ${firstDeliveryMs} ms; ${master.serviceId} out/s while cut off ${oldMasterOutPerS}, ` +
        `${deliveredBetween} delivered between step-down and election`,
    );
    // fencing: the old master stopped before its lease could expire on etcd's side (the lease
    // runs from its last renewal, sent before the cut), so before anyone else could be elected
    expect(steppedDownMs).toBeLessThan(LEASE_TTL * 1000);
    expect(timeOf(stepDownLine)).toBeLessThan(next.at);
    expect(next.node).not.toBe(master);
    expect(oldMasterOutPerS).toBe(0);
    expect(deliveredBetween).toBe(0);
    expect(f).toMatchObject({ lost: 0, unexpected: 0 });
    expect(f.ok).toBeGreaterThan(0);
    expect(f.duplicated).toBeLessThanOrEqual(PREFETCH);
  }, 150_000);
});
