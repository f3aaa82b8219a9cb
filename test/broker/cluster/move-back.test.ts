import { describe, expect, test } from 'vitest';
import type { WhiskerError } from '../../../src/protocol/errors.js';
import { whisker } from '../../support/broker-process.js';
import { clusterProcesses } from '../../support/cluster-processes.js';
import { nextMaster } from '../../support/election-cluster.js';
import { startEtcd } from '../../support/etcd.js';
import { connect, until } from '../../support/harness.js';
import { historyBreaks, Receptions } from '../../support/receptions.js';

/**
 * A queue moved to set b and, as soon as that move ended, moved back to set a (SPEC §13, issue 31,
 * test/attacks-31 "Finding (attack 2 roundtrip)"), under ~1,000 msg/s with a consumer slower than
 * the sends (a backlog moves both ways) and a listener; clients given set a's broker only. Every
 * answered send is delivered to both, the order per id holds, no error reaches a handler.
 *
 * Before the fix: the consumer lost ~1,000 of ~3,000 (set a remembered the messages it had handed
 * over as settled, and skipped them when they came back), a handler got `E_PROTOCOL` ("Subscription
 * N already exists": the client subscribed again on set a, where its subscription still was), and
 * the order per id broke (sends still on their way to b were sent again to a after newer ones).
 */
const QUEUE = 'mvb/v1';
const IDS = ['k0', 'k1', 'k2', 'k3'];
const PREFETCH = 10;

type Body = { id: string; n: number };

describe('whisker move there and at once back (real etcd, real broker processes)', () => {
  test('a queue moved to set b and at once back to a under ~1,000 msg/s: 0 lost, order per id kept, no error in the handlers', async () => {
    const etcd = await startEtcd();
    // retained on both sets: the history moves there and back, each record once (atk31c D: a's
    // own copy from before the move and the one handed back were both replayed)
    const retention = { seconds: 3_600 };
    const nodes = await clusterProcesses(etcd.url, { a: ['a1'], b: ['b1'] }, (set) => ({ channels: { [QUEUE]: set === 'a' ? { set: 'a', retention } : { retention } } }));
    const [a1, b1] = [nodes.get('a')![0]!, nodes.get('b')![0]!];
    await Promise.all([nextMaster([a1]), nextMaster([b1])]);
    await Promise.all([a1, b1].map((n) => n.process!.waitFor(/registered in the cluster/, 0, 15_000)));

    const hosts = [a1.spec];
    const producer = await connect('mvb-producer', hosts, { sendTimeout: 30_000 });
    const consumer = await connect('mvb-consumer', hosts, { dedupeWindow: 0 });
    const listener = await connect('mvb-listener', hosts, { dedupeWindow: 0 });
    const errors: WhiskerError[] = [];
    for (const c of [producer, consumer, listener]) c.on('error', (e) => errors.push(e));
    const handlerErrors: string[] = [];
    const consumed = new Receptions(IDS);
    const listened = new Receptions(IDS);
    // slower than the sends (10 at a time, 20 ms each: ~500/s): each set holds a backlog when it hands the queue over
    let ackDelayMs = 20;
    await consumer.consume(`${QUEUE}/*`, { prefetch: PREFETCH }, (err, msg, done) => {
      if (err) return void handlerErrors.push(`consumer ${err.code}: ${err.message}`);
      consumed.note(msg as Body);
      setTimeout(() => done!(), ackDelayMs);
    }).ready;
    await listener.listen(`${QUEUE}/*`, (err, msg) => {
      if (err) return void handlerErrors.push(`listener ${err.code}: ${err.message}`);
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
        sends.push(producer.send(`${QUEUE}/${id}`, body).then(() => void owed.push(body), (error: WhiskerError) => void failed.push(`${id}:${body.n} ${error.code}`)));
      }
    }, 5);
    await until(() => sent >= 2_000, 30_000, '2,000 sent before the move');

    const there = await whisker(['move', QUEUE, '--to', 'b', '-c', a1.configPath, '--timeout', '60'], { timeoutMs: 80_000 });
    // back as soon as the first move printed `moved` (the attack's roundtrip)
    const back = await whisker(['move', QUEUE, '--to', 'a', '-c', a1.configPath, '--timeout', '60'], { timeoutMs: 80_000 });
    expect(there.stdout + there.stderr).toContain(`moved ${QUEUE} from a to b`);
    expect(back.stdout + back.stderr).toContain(`moved ${QUEUE} from b to a`);
    ackDelayMs = 2;
    const after = sent;
    await until(() => sent >= after + 500, 30_000, '500 more sent after the moves');
    clearInterval(pacer);
    await Promise.all(sends);
    await until(() => consumed.lost(owed) === 0 && listened.lost(owed) === 0, 30_000, 'every stored message consumed and listened').catch(() => undefined);

    // the history, on set a again: every answered send once, in send order per id
    const breaksInHistory = await historyBreaks(producer, QUEUE, IDS, owed);
    const report = {
      sent, stored: owed.length, failed: failed.length, historyBreaks: breaksInHistory,
      consumer: { got: consumed.received, lost: consumed.lost(owed), duplicates: consumed.duplicates(), orderBreaks: consumed.orderBreaks() },
      listener: { got: listened.received, lost: listened.lost(owed), duplicates: listened.duplicates(), orderBreaks: listened.orderBreaks() },
      handlerErrors: handlerErrors.slice(0, 5),
      clientErrors: errors.slice(0, 5).map((e) => `${e.code}: ${e.message}`),
    };
    for (const node of [a1, b1]) console.log(node.serviceId, node.process!.output().split('\n').filter((line) => /move|hand-over/.test(line)).join('\n'));
    console.log(`move there and back: ${JSON.stringify(report)}`);
    expect(failed).toEqual([]);
    expect(handlerErrors).toEqual([]);
    expect(report.consumer.lost).toBe(0);
    expect(report.listener.lost).toBe(0);
    expect(report.consumer.orderBreaks).toEqual([]);
    expect(report.listener.orderBreaks).toEqual([]);
    expect(breaksInHistory).toEqual([]);
    // at most what was in flight at each of the two moves (the consumer's prefetch; the listener acks at once)
    expect(report.consumer.duplicates).toBeLessThanOrEqual(2 * PREFETCH);
    expect(errors.filter((e) => e.code === 'E_MOVED' || e.code === 'E_PROTOCOL')).toEqual([]);
    await Promise.all([producer.disconnect(), consumer.disconnect(), listener.disconnect()]);
  }, 90_000);
});
