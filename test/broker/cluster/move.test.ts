import { describe, expect, test } from 'vitest';
import type { WhiskerError } from '../../../src/protocol/errors.js';
import { startProcess, whisker } from '../../support/broker-process.js';
import { clusterProcesses } from '../../support/cluster-processes.js';
import { type ElectedNode, nextMaster, offsets } from '../../support/election-cluster.js';
import { startEtcd } from '../../support/etcd.js';
import { connect, until } from '../../support/harness.js';
import { Receptions } from '../../support/receptions.js';

/**
 * `whisker move ep/ver --to SET` (SPEC §13, issue 31 item 4) with real broker processes on a real
 * etcd: a queue moved from set a to set b under ~1,000 msg/s, a consumer (prefetch 10) and a
 * listener on it. Nothing lost, order per id kept (first receptions), duplicates at most what was
 * in flight; and again with set a's master killed -9 as it starts the hand-over, and with set b's
 * master killed -9 as it sees the move (before it took the hand-over).
 */
const QUEUE = 'mv/v1';
const IDS = ['k0', 'k1', 'k2', 'k3'];
const PREFETCH = 10;

type Body = { id: string; n: number };

async function moveUnderTraffic(sets: Record<string, string[]>, kill: 'none' | 'old' | 'new' | 'restart-after') {
  const killOldMaster = kill === 'old';
  const etcd = await startEtcd();
  const nodes = await clusterProcesses(etcd.url, sets, (set) => (set === 'a' ? { channels: { [QUEUE]: { set: 'a' } } } : {}));
  const [aNodes, bNodes] = [nodes.get('a')!, nodes.get('b')!];
  const masterA = await nextMaster(aNodes);
  const masterB = await nextMaster(bNodes);
  const all = [...aNodes, ...bNodes];
  await Promise.all(all.map((n) => n.process!.waitFor(/registered in the cluster/, 0, 15_000)));
  await Promise.all(all.filter((n) => n !== masterA && n !== masterB).map((n) => n.process!.waitFor(/in step with the master/, 0, 15_000)));

  // every client is given set a's brokers only: the map and E_MOVED take them to set b
  const hosts = aNodes.map((n) => n.spec);
  const producer = await connect('move-producer', hosts, { sendTimeout: 30_000 });
  const consumer = await connect('move-consumer', hosts, { dedupeWindow: 0 });
  const listener = await connect('move-listener', hosts, { dedupeWindow: 0 });
  const errors: WhiskerError[] = [];
  for (const c of [producer, consumer, listener]) c.on('error', (e) => errors.push(e));
  const consumed = new Receptions(IDS);
  const listened = new Receptions(IDS);
  // slower than the sends (10 at a time, 20 ms each: ~500/s): set a holds a backlog when the move
  // starts; 5 ms each once the move is done (the test then only waits for the rest)
  let ackDelayMs = 20;
  await consumer.consume(`${QUEUE}/*`, { prefetch: PREFETCH }, (err, msg, done) => {
    if (err) throw err;
    consumed.note(msg as Body);
    setTimeout(() => done!(), ackDelayMs);
  }).ready;
  // a second listener name that pauses, leaves before the move and comes back after it: its group
  // (records, no member: kept for it, docs/protocol.md#groups) moves too
  const late = await connect('move-late-listener', hosts, { dedupeWindow: 0 });
  const lateSeen = new Receptions(IDS);
  const lateListen = () => late.listen(`${QUEUE}/*`, (err, msg) => {
    if (err) throw err;
    lateSeen.note(msg as Body);
  });
  let lateHandle = lateListen();
  await lateHandle.ready;
  await listener.listen(`${QUEUE}/*`, (err, msg) => {
    if (err) throw err;
    listened.note(msg as Body);
  }).ready;

  const owed: Body[] = [];
  const failed: string[] = [];
  const sends: Promise<void>[] = [];
  const next = new Map(IDS.map((id) => [id, 0]));
  let sent = 0;
  // ~1,000 msg/s: 5 every 5 ms, round the ids
  const pacer = setInterval(() => {
    for (let k = 0; k < 5; k++) {
      const id = IDS[sent++ % IDS.length]!;
      const body = { id, n: next.get(id)! };
      next.set(id, body.n + 1);
      sends.push(
        producer.send(`${QUEUE}/${id}`, body).then(
          () => void owed.push(body),
          (error: WhiskerError & { info?: { storedBy?: string[] } }) => void (error.info?.storedBy?.length ? owed.push(body) : failed.push(`${id}:${body.n} ${error.code}`)),
        ),
      );
    }
  }, 5);
  await until(() => sent >= 500, 30_000, '500 sent');
  lateHandle.pause();
  await until(() => sent >= 1_500, 30_000, '1,500 sent');
  await lateHandle.close();
  await until(() => sent >= 2_000, 30_000, '2,000 sent before the move');

  const from = offsets(all);
  const started = performance.now();
  // asked of a broker the test does not kill (set a's master may be either of a1, a2)
  const asked = killOldMaster ? bNodes[0]! : aNodes[0]!;
  const moving = whisker(['move', QUEUE, '--to', 'b', '-c', asked.configPath, '--timeout', '60'], { timeoutMs: 80_000 });
  let phaseAtKill = '';
  if (killOldMaster) {
    // as soon as set a's master logs the move: it delivers nothing of the queue and is about to write the hand-over
    await masterA.process!.waitFor(/handing the queue over/, from.get(masterA), 10_000);
    phaseAtKill = /hand-over written/.test(masterA.process!.output().slice(from.get(masterA))) ? 'after the hand-over was written' : 'before the hand-over was written';
    masterA.process!.child.kill('SIGKILL');
    await masterA.process!.exited;
  }
  if (kill === 'new') {
    // as soon as set b's master sees the move: it holds new sends aside, the hand-over not taken yet
    await masterB.process!.waitFor(/taking the queue over/, from.get(masterB), 10_000);
    phaseAtKill = /hand-over taken/.test(masterB.process!.output().slice(from.get(masterB))) ? 'after the hand-over was taken' : 'before the hand-over was taken';
    masterB.process!.child.kill('SIGKILL');
    await masterB.process!.exited;
  }
  const result = await moving;
  /** what a restarted broker printed before its restart */
  const earlier = new Map<ElectedNode, string>();
  const moveMs = performance.now() - started;
  if (kill === 'restart-after') {
    // set b holds what was handed over and, queued after it, what it took during the move (the
    // consumer is slower than the sends): a restart loads them again, in the same order
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    masterB.process!.child.kill('SIGKILL');
    await masterB.process!.exited;
    earlier.set(masterB, masterB.process!.output());
    masterB.process = await startProcess(masterB.configPath, { startTimeoutMs: 30_000 });
  }
  ackDelayMs = 5;
  expect(result.stderr).toBe('');
  expect(result.stdout).toContain(`moved ${QUEUE} from a to b`);
  lateHandle = lateListen();
  await lateHandle.ready;
  const after = sent;
  await until(() => sent >= after + 1_000, 30_000, '1,000 more sent after the move');
  clearInterval(pacer);
  await Promise.all(sends);
  await until(() => consumed.lost(owed) === 0 && listened.lost(owed) === 0 && lateSeen.lost(owed) === 0, 40_000, 'every stored message consumed and listened').catch(() => undefined);

  const alive = all.find((n) => n !== masterA && (n !== masterB || kill === 'restart-after') && n.process!.child.exitCode === null) ?? bNodes[0]!;
  const status = JSON.parse((await whisker(['cluster', 'status', '-c', alive.configPath, '--json'])).stdout) as { sets: Array<{ name: string; placements: number }>; moves: unknown[] };
  const report = {
    sent, stored: owed.length, failed: failed.length, moveMs: Math.round(moveMs), phaseAtKill,
    consumer: { lost: consumed.lost(owed), duplicates: consumed.duplicates(), orderBreaks: consumed.orderBreaks().length },
    listener: { lost: listened.lost(owed), duplicates: listened.duplicates(), orderBreaks: listened.orderBreaks().length },
    lateListener: { lost: lateSeen.lost(owed), duplicates: lateSeen.duplicates(), orderBreaks: lateSeen.orderBreaks().length },
    breaks: [...consumed.orderBreaks(), ...listened.orderBreaks(), ...lateSeen.orderBreaks()].slice(0, 12),
    handedOver: bNodes.map((n) => /"messages":(\d+)[^\n]*hand-over taken/.exec((earlier.get(n) ?? '') + n.process!.output())?.[1]),
    settledIdsHandedOver: bNodes.map((n) => Number(/"recentIds":(\d+)[^\n]*hand-over taken/.exec((earlier.get(n) ?? '') + n.process!.output())?.[1] ?? -1)),
  };
  for (const node of all) console.log(node.serviceId, node.process!.output().split('\n').filter((line) => /move|hand-over/.test(line)).join('\n'));
  console.log(`move under traffic${kill === 'none' ? '' : ` (${kill} master killed -9)`}: ${JSON.stringify(report)}`);
  if (kill === 'old') expect(phaseAtKill).toBe('before the hand-over was written');
  if (kill === 'new') expect(phaseAtKill).toBe('before the hand-over was taken');
  expect(failed).toEqual([]);
  expect(report.consumer.lost).toBe(0);
  expect(report.listener.lost).toBe(0);
  expect(report.consumer.orderBreaks).toBe(0);
  expect(report.listener.orderBreaks).toBe(0);
  expect(report.lateListener.lost).toBe(0);
  expect(report.lateListener.orderBreaks).toBe(0);
  // duplicates: at most what was in flight at the move (the consumer's prefetch; the listener acks at once)
  // ...and, for a restart, the prefetch again each time the restarted broker began to deliver (a
  // lease lost and won again on a loaded machine is another failover), plus the acks the killed
  // broker had read and not yet written (30 once in 4 runs with one stint: a doubt for the bound
  // of docs/operations.md, which says the prefetch)
  const stints = kill === 'restart-after' ? (masterB.process!.output().match(/delivering: this broker acts as master/g) ?? []).length : 0;
  expect(report.consumer.duplicates).toBeLessThanOrEqual((1 + stints + (kill === 'restart-after' ? 1 : 0)) * PREFETCH);
  // the ids set a settled before the move (every group acked the first ones): a re-send is not delivered again on b
  expect(Math.max(...report.settledIdsHandedOver)).toBeGreaterThan(0);
  expect(report.listener.duplicates).toBeLessThanOrEqual(50);
  expect(status.sets.find((s) => s.name === 'b')?.placements).toBe(1);
  expect(status.moves).toEqual([]);
  expect(errors.filter((e) => e.code === 'E_MOVED')).toEqual([]);
  await Promise.all([producer.disconnect(), consumer.disconnect(), listener.disconnect(), late.disconnect()]);
  return { aNodes, bNodes } as { aNodes: ElectedNode[]; bNodes: ElectedNode[] };
}

describe('whisker move (real etcd, real broker processes)', () => {
  test('a queue moved under ~1,000 msg/s with a consumer and a listener: 0 lost, order per id kept, duplicates within prefetch', async () => {
    await moveUnderTraffic({ a: ['a1'], b: ['b1'] }, 'none');
  }, 90_000);

  // 2 of 5 runs gave 4 order breaks per id here before the slave queued its appends in the order
  // they began (issue 31; messages/appends.ts), and the hand-over carried no settled ids
  test('the same with the old set\'s master killed -9 mid-move: its slave takes the move up, in its master\'s order, with the settled ids', async () => {
    await moveUnderTraffic({ a: ['a1', 'a2'], b: ['b1'] }, 'old');
  }, 90_000);

  test('the same with the new set\'s master killed -9 mid-move: its slave takes the hand-over and ends the move', async () => {
    await moveUnderTraffic({ a: ['a1'], b: ['b1', 'b2'] }, 'new');
  }, 90_000);

  // before its hand-over took seqs set apart ahead of what waited aside: 3,051 and 3,801 first
  // receptions out of order per id (test/attacks-31c b-restart-after), the store giving the
  // queue back in seq order
  test('set b killed -9 and restarted once the move ended: it delivers what was handed over before what it took meanwhile', async () => {
    await moveUnderTraffic({ a: ['a1'], b: ['b1'] }, 'restart-after');
  }, 90_000);
});
