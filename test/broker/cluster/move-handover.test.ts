import { describe, expect, test } from 'vitest';
import type { WhiskerClient } from '../../../src/client/client.js';
import type { WhiskerError } from '../../../src/protocol/errors.js';
import { whisker } from '../../support/broker-process.js';
import { clusterProcesses } from '../../support/cluster-processes.js';
import { type ElectedNode, nextMaster, offsets } from '../../support/election-cluster.js';
import { startEtcd } from '../../support/etcd.js';
import { connect, until } from '../../support/harness.js';
import { newKeyPair, RawPeer } from '../../support/raw-peer.js';

/**
 * What `whisker move` hands over besides the messages held (issue 31 item 4), with real broker
 * processes on a real etcd: set a (a1) and set b (b1), the queue retained on both and every id
 * of it reserved (`!` read rule). Before the move, on set a: a name reserves `r1` and leaves (its
 * hold runs), 10 messages on `k1` are listened and settled, 5 on `k2` wait for nobody. Then one
 * move to b, and what each part of the hand-over promises is checked on set b.
 */
const QUEUE = 'mv/v1';
const retention = { seconds: 3_600 };
const rules = [{ client: '*', read: [`!${QUEUE}/*`], write: [`${QUEUE}/*`] }];
const common = { rules, reservationHold: 3_600, dedupeWindow: 600 };

const keys = newKeyPair();

type Raw = Array<{ messageId: string; id: string; n: number }>;

/** messages sent with ids of our own (a re-send is the same id), answered without error */
async function publish(to: ElectedNode | RawPeer, messages: Raw): Promise<void> {
  const logged = to instanceof RawPeer;
  const peer = logged ? to : await RawPeer.open(to.port);
  if (!logged) await peer.login('mv-raw', keys);
  peer.sendJson({ type: 'publish', messages: messages.map((m) => ({ messageId: m.messageId, channel: `${QUEUE}/${m.id}`, data: { n: m.n }, created: Date.now() })) });
  const results = await peer.next('results', () => true, 15_000);
  if (!logged) await peer.terminate();
  expect(results.results.filter((r) => r.error)).toEqual([]);
}

/**
 * The cluster, the state above made on set a, and the move (each test its own: processes end
 * after each test). `during` runs once set b's broker logs the move (`taking the queue over`),
 * before the hand-over is taken (the old master waits 200 ms before it writes it), with a peer
 * logged in on b1 already; the log says whether it came in time (`sentMeanwhile`).
 */
async function moved(during?: (b1: RawPeer, nodes: { aNodes: ElectedNode[]; bNodes: ElectedNode[] }) => Promise<void>, before?: (hosts: string[]) => Promise<void>): Promise<{ aNodes: ElectedNode[]; bNodes: ElectedNode[]; hosts: string[]; listener: WhiskerClient; heard: number[]; sentMeanwhile: number }> {
  const etcd = await startEtcd();
  const nodes = await clusterProcesses(etcd.url, { a: ['a1'], b: ['b1'] }, (set) => ({
    ...common,
    channels: { [QUEUE]: set === 'a' ? { set: 'a', retention } : { retention } },
  }));
  const [aNodes, bNodes] = [nodes.get('a')!, nodes.get('b')!];
  await nextMaster(aNodes);
  await nextMaster(bNodes);
  await Promise.all([...aNodes, ...bNodes].map((n) => n.process!.waitFor(/registered in the cluster/, 0, 15_000)));
  // every client is given set a's broker only: the map takes it to b after the move
  const hosts = aNodes.map((n) => n.spec);

  const owner = await connect('mv-owner', hosts);
  await owner.listen(`${QUEUE}/r1`, () => {}).ready;
  await owner.disconnect(); // r1 stays mv-owner's for reservationHold (an hour)

  const heard: number[] = [];
  const listener = await connect('mv-listener', hosts, { dedupeWindow: 0 });
  await listener.listen(`${QUEUE}/k1`, (err, msg) => {
    if (err) throw err;
    heard.push((msg as { n: number }).n);
  }).ready;
  await publish(aNodes[0]!, Array.from({ length: 10 }, (_, n) => ({ messageId: `mv-k1-${n}`, id: 'k1', n })));
  await publish(aNodes[0]!, Array.from({ length: 5 }, (_, n) => ({ messageId: `mv-k2-${n}`, id: 'k2', n })));
  await until(() => heard.length === 10, 10_000, 'the 10 messages on k1 listened on set a');
  await new Promise((resolve) => setTimeout(resolve, 300)); // their acks settle them on a

  await before?.(hosts);
  const b1 = await RawPeer.open(bNodes[0]!.port);
  await b1.login('mv-raw', keys);
  const moving = whisker(['move', QUEUE, '--to', 'b', '-c', aNodes[0]!.configPath, '--timeout', '30'], { timeoutMs: 40_000 });
  if (during) {
    await bNodes[0]!.process!.waitFor(/taking the queue over/, 0, 15_000);
    await during(b1, { aNodes, bNodes });
  }
  const moved = await moving;
  await b1.terminate();
  expect(moved.stderr).toBe('');
  expect(moved.stdout).toContain(`moved ${QUEUE} from a to b`);
  const taken = bNodes[0]!.process!.output().split('\n').filter((line) => /hand-over taken/.test(line)).join('\n');
  console.log(taken);
  const sentMeanwhile = Number(/"sentMeanwhile":(\d+)/.exec(taken)?.[1] ?? -1);
  return { aNodes, bNodes, hosts, listener, heard, sentMeanwhile };
}

describe('whisker move hands over history, settled ids and reservations (real etcd, real broker processes)', () => {
  test('retained history moves: a replay on set b returns what set a settled and held, then what b took, each once, in order', async () => {
    // one sent on b during the move (held aside, its history record waits), one after
    const { hosts, listener, sentMeanwhile } = await moved((b1) => publish(b1, [{ messageId: 'mv-k1-during', id: 'k1', n: 10 }]));
    expect(sentMeanwhile).toBe(1);
    const producer = await connect('mv-producer', hosts);
    await producer.send(`${QUEUE}/k1`, { n: 11 });
    // k1 is mv-listener's (reserved: it replays it); k2 nobody's yet
    const replayed: Array<{ id: string; n: number }> = [];
    for await (const msg of listener.replay<{ n: number }>(`${QUEUE}/k1`, { since: 0 })) replayed.push({ id: 'k1', n: msg.data.n });
    const k2: number[] = [];
    for await (const msg of producer.replay<{ n: number }>(`${QUEUE}/k2`, { since: 0 })) k2.push(msg.data.n);
    console.log(`replayed on b: k1 ${replayed.length}, k2 ${k2.length}`);
    expect(replayed.map((r) => r.n)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(k2).toEqual([0, 1, 2, 3, 4]);
    await producer.disconnect();
  }, 60_000);

  test('settled ids move: a re-send on set b of a message set a delivered is not delivered again', async () => {
    // one re-send on b during the move (held aside until the hand-over), one after it
    const { bNodes, heard, sentMeanwhile } = await moved((b1) => publish(b1, [{ messageId: 'mv-k1-3', id: 'k1', n: 3 }]));
    expect(sentMeanwhile).toBe(1);
    await publish(bNodes[0]!, [{ messageId: 'mv-k1-4', id: 'k1', n: 4 }]);
    await publish(bNodes[0]!, [{ messageId: 'mv-k1-marker', id: 'k1', n: 99 }]);
    await until(() => heard.includes(99), 15_000, 'the marker sent after the re-send heard');
    console.log(`heard on k1: ${JSON.stringify(heard)}`);
    expect(heard.filter((n) => n === 3)).toHaveLength(1);
    expect(heard.filter((n) => n === 4)).toHaveLength(1);
  }, 60_000);

  test('settled ids move from a promoted slave: set a\'s master killed -9 before the move, its slave hands over the ids it settled', async () => {
    // set a of two brokers: a client sends to both (SPEC §9), so the slave holds each message and
    // forgets it on its master's settlement; that slave, elected, writes the hand-over
    const etcd = await startEtcd();
    const nodes = await clusterProcesses(etcd.url, { a: ['a1', 'a2'], b: ['b1'] }, (set) => ({ ...common, channels: { [QUEUE]: set === 'a' ? { set: 'a' } : {} } }));
    const [aNodes, bNodes] = [nodes.get('a')!, nodes.get('b')!];
    const masterA = await nextMaster(aNodes);
    await nextMaster(bNodes);
    const all = [...aNodes, ...bNodes];
    await Promise.all(all.map((n) => n.process!.waitFor(/registered in the cluster/, 0, 15_000)));
    const slaveA = aNodes.find((n) => n !== masterA)!;
    await slaveA.process!.waitFor(/in step with the master/, 0, 15_000);
    const heard: number[] = [];
    const listener = await connect('mv-listener', aNodes.map((n) => n.spec), { dedupeWindow: 0 });
    await listener.listen(`${QUEUE}/k1`, (err, msg) => void (err || heard.push((msg as { n: number }).n))).ready;
    const messages = Array.from({ length: 10 }, (_, n) => ({ messageId: `mv-k1-${n}`, id: 'k1', n }));
    await Promise.all(aNodes.map((node) => publish(node, messages)));
    await until(() => heard.length === 10, 10_000, 'the 10 messages on k1 listened on set a');
    await new Promise((resolve) => setTimeout(resolve, 500)); // their acks settle them on a, and the feed on its slave

    const from = offsets(all);
    masterA.process!.child.kill('SIGKILL');
    await masterA.process!.exited;
    await nextMaster([slaveA], from);
    const moving = await whisker(['move', QUEUE, '--to', 'b', '-c', bNodes[0]!.configPath, '--timeout', '30'], { timeoutMs: 40_000 });
    expect(moving.stdout).toContain(`moved ${QUEUE} from a to b`);
    const written = slaveA.process!.output().split('\n').find((line) => /hand-over written/.test(line)) ?? '';
    console.log(written);
    // a re-send on b of a message set a delivered, then a marker
    await publish(bNodes[0]!, [{ messageId: 'mv-k1-4', id: 'k1', n: 4 }, { messageId: 'mv-k1-marker', id: 'k1', n: 99 }]);
    await until(() => heard.includes(99), 15_000, 'the marker sent after the re-send heard');
    console.log(`heard on k1: ${JSON.stringify(heard)}`);
    expect(Number(/"recentIds":(\d+)/.exec(written)?.[1])).toBe(10);
    expect(heard.filter((n) => n === 4)).toHaveLength(1);
    await listener.disconnect();
  }, 60_000);

  test('reservations move: another name that took a reserved id on b during the move loses it, is refused it after; its owner gets it', async () => {
    // the intruder asks for r1 once b sees the move: b gives it (it does not know a's reservations yet), the hand-over takes it back
    let client: WhiskerClient | null = null;
    let during: { errors: WhiskerError[]; heard: number; ready: Promise<unknown> } | null = null;
    const before = async (hosts: string[]) => void (client = await connect('mv-intruder', hosts));
    const { bNodes, hosts } = await moved(async () => {
      const errors: WhiskerError[] = [];
      let heard = 0;
      const handle = client!.listen(`${QUEUE}/r1`, (err) => {
        if (err) errors.push(err);
        else heard++;
      });
      during = { errors, get heard() { return heard; }, ready: handle.ready.then(() => 'granted', (e: WhiskerError) => void errors.push(e)) };
    }, before);
    const gap = during!;
    const first = await gap.ready;
    await until(() => gap.errors.some((e) => e.code === 'E_FORBIDDEN'), 10_000, 'the intruder refused r1 (at once or once the hand-over came)');
    console.log(`intruder during the move: ${first === 'granted' ? 'granted on b, then removed by the hand-over' : 'refused'}; errors ${gap.errors.map((e) => `${e.code} ${JSON.stringify(e.details)}`).join(', ')}`);
    expect(gap.errors.find((e) => e.code === 'E_FORBIDDEN')?.details).toMatchObject({ reason: 'reserved' });

    const intruder2 = await connect('mv-intruder', hosts);
    const refused = intruder2.listen(`${QUEUE}/r1`, () => {}).ready;
    await expect(refused).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
    const error = await refused.catch((e: WhiskerError) => e);
    expect((error as WhiskerError).details).toMatchObject({ reason: 'reserved' });
    const owner = await connect('mv-owner', hosts);
    const ownerHeard: number[] = [];
    await owner.listen(`${QUEUE}/r1`, (err, msg) => void (err || ownerHeard.push((msg as { n: number }).n))).ready;
    await publish(bNodes[0]!, [{ messageId: 'mv-r1-0', id: 'r1', n: 7 }]);
    await until(() => ownerHeard.length === 1, 10_000, 'the owner hears r1');
    expect(gap.heard).toBe(0);
    const list = await whisker(['reservations', 'list', '-c', bNodes[0]!.configPath]);
    console.log(list.stdout);
    expect(list.stdout).toMatch(/mv\/v1\/r1\s+mv-owner/);
  }, 60_000);

  test('whisker cluster status shows a move under way (set b\'s broker stopped with SIGSTOP after the hand-over was written), then none once it ended', async () => {
    const seenStatus: string[] = [];
    const { aNodes } = await moved(async (_b1, { aNodes: a, bNodes: b }) => {
      const node = b[0]!;
      // stopped before it can take the hand-over: the move waits at "import"
      node.process!.child.kill('SIGSTOP');
      try {
        await a[0]!.process!.waitFor(/hand-over written/, 0, 10_000);
        let json: { moves: Array<{ queue: string; from: string; to: string; phase: string }> } = { moves: [] };
        for (let tries = 0; tries < 20 && !json.moves.some((m) => m.phase === 'import'); tries++) {
          json = JSON.parse((await whisker(['cluster', 'status', '-c', a[0]!.configPath, '--json'])).stdout) as typeof json;
        }
        expect(json.moves).toEqual([{ queue: QUEUE, from: 'a', to: 'b', phase: 'import' }]);
        seenStatus.push((await whisker(['cluster', 'status', '-c', a[0]!.configPath])).stdout);
      } finally {
        node.process!.child.kill('SIGCONT');
      }
    });
    console.log(seenStatus[0]);
    expect(seenStatus[0]).toContain(`moving ${QUEUE} from a to b: import`);
    const after = JSON.parse((await whisker(['cluster', 'status', '-c', aNodes[0]!.configPath, '--json'])).stdout) as { moves: unknown[]; sets: Array<{ name: string; placements: number }> };
    expect(after.moves).toEqual([]);
    expect(after.sets.find((s) => s.name === 'b')?.placements).toBe(1);
  }, 60_000);
});
