import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { type BrokerProcess, root, startProcess, whisker, writeConfig } from '../../support/broker-process.js';
import { LEASE_TTL } from '../../support/election-cluster.js';
import { type EtcdProcess, startEtcd } from '../../support/etcd.js';
import { tempDir } from '../../support/harness.js';
import { Network, type NetNode, unavailable } from '../../support/netns.js';

/**
 * Issue 27, the nemesis's seed 2027: the master cut from the client process alone (its links to
 * etcd and to its peers kept) while the client stays connected to the two slaves. A listener, a
 * consumer group and a producer on one channel, each its own client in one process, as the
 * nemesis's workload. Every send answered OK must reach the listener and the consumer group,
 * and the listener (client dedupe on) must see each message once. Network namespaces, real
 * etcd, real processes; skipped without root.
 */
const why = unavailable();
if (why) console.warn(`listener cut test skipped: ${why}`);

const HEARTBEAT_S = 2;
const PORT = 7790;
const CUTS = 4;
const CUT_MS = 4_500;
/** slow enough that, at the cut, the listener and the consumer often have nothing in flight on the master */
const SEND_EVERY_MS = 40;

interface Tally {
  sent: Set<number>;
  ok: Set<number>;
  listened: Map<number, number>;
  consumed: Map<number, number>;
  ready: boolean;
  settled: number;
}

async function held(path: string): Promise<number> {
  const result = await whisker(['list', '-c', path, '--json']);
  const { queues } = JSON.parse(result.stdout) as { queues: Array<{ messages: number }> };
  return queues.reduce((sum, q) => sum + q.messages, 0);
}

const until = async (predicate: () => boolean, timeoutMs: number): Promise<boolean> => {
  const end = Date.now() + timeoutMs;
  while (!predicate() && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
  return predicate();
};

describe.skipIf(why !== null)('the master cut from the client alone (network namespaces, real etcd, real processes)', () => {
  let network: Network | null = null;
  let etcd: EtcdProcess | null = null;
  const children: ChildProcess[] = [];
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await etcd?.kill();
    network?.destroy();
  });

  test('the listener and the consumers each get every answered send; the listener sees each once', async () => {
    network = new Network();
    const net = network;
    etcd = await startEtcd(net.add('e'));
    const nets = ['a', 'b', 'c'].map((id) => net.add(id));
    const spec = (n: NetNode) => `${n.address}:${PORT}@${n.name}`;
    const prefix = `/whisker/listener-cut-${process.pid}`;
    const nodes: Array<{ net: NetNode; path: string; process: BrokerProcess }> = await Promise.all(
      nets.map(async (n) => {
        const path = writeConfig(tempDir(`whisker-listener-cut-${n.name}-`), {
          serviceId: n.name, peers: nets.filter((o) => o !== n).map(spec), socketServer: { host: n.address, port: PORT },
          heartbeatTimeout: HEARTBEAT_S, requeueInterval: 30, maxItemsInQueue: 1_000_000,
          election: { etcd: { hosts: [etcd!.url] }, prefix, leaseTtl: LEASE_TTL },
        });
        const process = await startProcess(path, { wrap: n.exec, startTimeoutMs: 30_000 });
        children.push(process.child);
        return { net: n, path, process };
      }),
    );
    const master = await Promise.any(nodes.map(async (node) => (await node.process.waitFor(/"msg":"delivering: this broker acts as master"/, 0, 20_000), node)));
    await Promise.all(nodes.filter((n) => n !== master).map((n) => n.process.waitFor(/in step with the master/, 0, 20_000)));

    const nk = net.add('k');
    const tally: Tally = { sent: new Set(), ok: new Set(), listened: new Map(), consumed: new Map(), ready: false, settled: 0 };
    const options = { hosts: nets.map(spec), keysDirectory: tempDir('whisker-listener-cut-keys-'), heartbeatTimeout: HEARTBEAT_S * 1000, sendTimeout: 60_000, sendEveryMs: SEND_EVERY_MS };
    const child = spawn(nk.exec[0]!, [...nk.exec.slice(1), process.execPath, join(root, 'test/support/netns-listen-client.mjs'), JSON.stringify(options)], { stdio: ['pipe', 'pipe', 'inherit'] });
    children.push(child);
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      const lines = (buffered + chunk.toString()).split('\n');
      buffered = lines.pop()!;
      for (const text of lines) {
        const event = JSON.parse(text) as { e: string; seq: number };
        if (event.e === 'sent') tally.sent.add(event.seq);
        else if (event.e === 'ok') tally.ok.add(event.seq);
        else if (event.e === 'listened') tally.listened.set(event.seq, (tally.listened.get(event.seq) ?? 0) + 1);
        else if (event.e === 'consumed') tally.consumed.set(event.seq, (tally.consumed.get(event.seq) ?? 0) + 1);
        else if (event.e === 'ready') tally.ready = true;
        else if (event.e === 'settled') tally.settled++;
      }
    });
    expect(await until(() => tally.ready, 30_000)).toBe(true);
    child.stdin!.write('go\n');
    expect(await until(() => tally.listened.size >= 50, 20_000)).toBe(true);

    // the master cut from the client process alone, under traffic, then healed
    const master_ = master.net.name;
    for (let i = 0; i < CUTS; i++) {
      net.cut(master_, 'k');
      await new Promise((r) => setTimeout(r, CUT_MS));
      net.heal(master_, 'k');
      const mark = tally.listened.size;
      expect(await until(() => tally.listened.size >= mark + 50, 30_000)).toBe(true);
      await new Promise((r) => setTimeout(r, 2_000));
    }
    child.stdin!.write('stop\n');
    expect(await until(() => tally.settled > 0, 70_000)).toBe(true);
    const ok = [...tally.ok];
    await until(() => ok.every((seq) => tally.listened.has(seq) && tally.consumed.has(seq)), 30_000);
    const listenerLost = ok.filter((seq) => !tally.listened.has(seq));
    const consumerLost = ok.filter((seq) => !tally.consumed.has(seq));
    const listenedTwice = [...tally.listened].filter(([, n]) => n > 1).map(([seq]) => seq);
    const consumedTwice = [...tally.consumed].reduce((sum, [, n]) => sum + n - 1, 0);
    const stillMaster = await master.process.waitFor(/"msg":"delivering: this broker acts as master"/, 0, 1_000);
    console.log(
      `master ${master_} cut from the client ${CUTS} x ${CUT_MS} ms: sent ${tally.sent.size}, ok ${ok.length}; listener lost ${listenerLost.length}` +
        `${listenerLost.length ? ` (${listenerLost.slice(0, 3).join(', ')}..${listenerLost.at(-1)})` : ''}, listened twice ${listenedTwice.length}` +
        `${listenedTwice.length ? ` (${listenedTwice.slice(0, 5).join(', ')})` : ''}; consumers lost ${consumerLost.length}, duplicated ${consumedTwice}`,
    );
    expect(stillMaster).toBeTruthy();
    await expect.poll(async () => (await Promise.all(nodes.map((n) => held(n.path)))).every((n) => n === 0), { timeout: 20_000, interval: 250 }).toBe(true);
    expect(ok.length).toBeGreaterThan(0);
    expect({ listenerLost: listenerLost.length, consumerLost: consumerLost.length, listenedTwice: listenedTwice.length }).toEqual({ listenerLost: 0, consumerLost: 0, listenedTwice: 0 });
  }, 180_000);
});
