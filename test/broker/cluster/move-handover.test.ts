import { describe, expect, test } from 'vitest';
import type { WhiskerClient } from '../../../src/client/client.js';
import type { WhiskerError } from '../../../src/protocol/errors.js';
import { whisker } from '../../support/broker-process.js';
import { clusterProcesses } from '../../support/cluster-processes.js';
import { type ElectedNode, nextMaster } from '../../support/election-cluster.js';
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

/** messages sent with ids of our own (a re-send is the same id), answered without error */
async function publish(node: ElectedNode, messages: Array<{ messageId: string; id: string; n: number }>): Promise<void> {
  const peer = await RawPeer.open(node.port);
  await peer.login('mv-raw', keys);
  peer.sendJson({ type: 'publish', messages: messages.map((m) => ({ messageId: m.messageId, channel: `${QUEUE}/${m.id}`, data: { n: m.n }, created: Date.now() })) });
  const results = await peer.next('results', () => true, 15_000);
  await peer.terminate();
  expect(results.results.filter((r) => r.error)).toEqual([]);
}

/** the cluster, the state above made on set a, and the move (each test its own: processes end after each test) */
async function moved(): Promise<{ aNodes: ElectedNode[]; bNodes: ElectedNode[]; hosts: string[]; listener: WhiskerClient; heard: number[] }> {
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

  const moved = await whisker(['move', QUEUE, '--to', 'b', '-c', aNodes[0]!.configPath, '--timeout', '30'], { timeoutMs: 40_000 });
  expect(moved.stderr).toBe('');
  expect(moved.stdout).toContain(`moved ${QUEUE} from a to b`);
  console.log(bNodes[0]!.process!.output().split('\n').filter((line) => /hand-over taken/.test(line)).join('\n'));
  return { aNodes, bNodes, hosts, listener, heard };
}

describe('whisker move hands over history, settled ids and reservations (real etcd, real broker processes)', () => {
  test('retained history moves: a replay on set b returns what set a settled and held, then what b took, each once, in order', async () => {
    const { hosts, listener } = await moved();
    const producer = await connect('mv-producer', hosts);
    await producer.send(`${QUEUE}/k1`, { n: 10 });
    // k1 is mv-listener's (reserved: it replays it); k2 nobody's yet
    const replayed: Array<{ id: string; n: number }> = [];
    for await (const msg of listener.replay<{ n: number }>(`${QUEUE}/k1`, { since: 0 })) replayed.push({ id: 'k1', n: msg.data.n });
    const k2: number[] = [];
    for await (const msg of producer.replay<{ n: number }>(`${QUEUE}/k2`, { since: 0 })) k2.push(msg.data.n);
    console.log(`replayed on b: k1 ${replayed.length}, k2 ${k2.length}`);
    expect(replayed.map((r) => r.n)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(k2).toEqual([0, 1, 2, 3, 4]);
    await producer.disconnect();
  }, 60_000);

  test('settled ids move: a re-send on set b of a message set a delivered is not delivered again', async () => {
    const { bNodes, heard } = await moved();
    await publish(bNodes[0]!, [{ messageId: 'mv-k1-3', id: 'k1', n: 3 }]);
    await publish(bNodes[0]!, [{ messageId: 'mv-k1-marker', id: 'k1', n: 99 }]);
    await until(() => heard.includes(99), 15_000, 'the marker sent after the re-send heard');
    console.log(`heard on k1: ${JSON.stringify(heard)}`);
    expect(heard.filter((n) => n === 3)).toHaveLength(1);
  }, 60_000);

  test('reservations move: another name is refused the id set a had reserved; its owner gets it', async () => {
    const { bNodes, hosts } = await moved();
    const intruder = await connect('mv-intruder', hosts);
    const refused = intruder.listen(`${QUEUE}/r1`, () => {}).ready;
    await expect(refused).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
    const error = await refused.catch((e: WhiskerError) => e);
    expect((error as WhiskerError).details).toMatchObject({ reason: 'reserved' });
    const owner = await connect('mv-owner', hosts);
    await owner.listen(`${QUEUE}/r1`, () => {}).ready;
    const list = await whisker(['reservations', 'list', '-c', bNodes[0]!.configPath]);
    console.log(list.stdout);
    await Promise.all([intruder.disconnect(), owner.disconnect()]);
  }, 60_000);
});
