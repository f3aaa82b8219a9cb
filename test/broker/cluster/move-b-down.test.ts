import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import type { WhiskerError } from '../../../src/protocol/errors.js';
import { root, startProcess, whisker } from '../../support/broker-process.js';
import { clusterProcesses } from '../../support/cluster-processes.js';
import { nextMaster } from '../../support/election-cluster.js';
import { startEtcd } from '../../support/etcd.js';
import { clientConfig, connect, until } from '../../support/harness.js';
import { historyBreaks, Receptions } from '../../support/receptions.js';

/**
 * A listener name away from set b when it takes a moved queue over (SPEC §13, issue 31, outside
 * check atk31c Finding C, test/attacks-31c move-b-down): set b's broker killed -9 during the move,
 * with sends it took aside, and restarted; the listener's connection lost before the move (its
 * group held on set a for `groupHold`, nothing unsettled in it), back once the move is done.
 * Every send made since it left reaches it, and the consumer gets every send.
 *
 * Before the fix the hand-over carried a group only through the messages it named: this one
 * named none, so set b queued what it took (and what it loaded at its restart) for the consumer
 * group alone, and the listener never got any of it (atk31c: 7,061 and 8,656 lost when both
 * brokers of b were killed and the listener came back to b after the producer; here every send
 * from its leaving to its return).
 *
 * Order per id too (atk31d): a second listener name away since before the first send has all it
 * is owed handed over as messages; what set b loaded at its restart must come after them, in
 * deliveries and in the retained channel's replay. Before aside.json (messages/aside-file.ts) the
 * restart queued and wrote them first: that listener's order broke at every id (170,171,172,0,1,2)
 * and the replay began with the ~470 reloaded records.
 */
const QUEUE = 'mbd/v1';
/** a queue on set b that the producer used before: its link to set b is up when the move starts */
const WARM = 'mbdw/v1';
const IDS = ['k0', 'k1', 'k2', 'k3'];
const LISTENER = 'mbd-listener';

type Body = { id: string; n: number };

const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
});

/** a listener name away from the start: what waits for it on set a is handed over as messages */
const LATE = 'mbd-late';

/** a process listening on the queue as `name`: killed -9, its connection is lost (its group held), not closed */
async function awayProcess(hosts: string[], name: string): Promise<ChildProcess> {
  const script = `
    const { client } = await import(${JSON.stringify(join(root, 'dist/index.js'))});
    const c = client(); c.on('error', () => {});
    await c.connect(${JSON.stringify(clientConfig(name, hosts))});
    await c.listen('${QUEUE}/*', () => {}).ready;
    process.stdout.write('ready\\n');
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('ready\n')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the listener process exited (${code}) before subscribing`)));
  });
  return child;
}

describe('whisker move with set b killed -9 mid-move (real etcd, real broker processes)', () => {
  test('set b restarted mid-move with sends it took aside: a listener name away at the hand-over gets every send since it left, the consumer every send', async () => {
    const etcd = await startEtcd();
    const nodes = await clusterProcesses(etcd.url, { a: ['a1'], b: ['b1'] }, () => ({ channels: { [QUEUE]: { set: 'a', retention: { seconds: 3_600 } }, [WARM]: { set: 'b' } } }));
    const [a1, b1] = [nodes.get('a')![0]!, nodes.get('b')![0]!];
    await Promise.all([nextMaster([a1]), nextMaster([b1])]);
    await Promise.all([a1, b1].map((n) => n.process!.waitFor(/registered in the cluster/, 0, 15_000)));

    const hosts = [a1.spec];
    const producer = await connect('mbd-producer', hosts, { sendTimeout: 30_000 });
    const consumer = await connect('mbd-consumer', hosts, { dedupeWindow: 0 });
    const errors: WhiskerError[] = [];
    for (const c of [producer, consumer]) c.on('error', (e) => errors.push(e));
    const handlerErrors: string[] = [];
    const consumed = new Receptions(IDS);
    await consumer.consume(`${QUEUE}/*`, { prefetch: 10 }, (err, msg, done) => {
      if (err) return void handlerErrors.push(`consumer ${err.code}: ${err.message}`);
      consumed.note(msg as Body);
      done!();
    }).ready;
    const away = await awayProcess(hosts, LISTENER);
    // a listener away before any send: all it is owed waits on set a and is handed over as
    // messages, and what set b takes meanwhile (and loads at its restart) must come after them
    const late = await awayProcess(hosts, LATE);
    late.kill('SIGKILL');
    await new Promise((resolve) => late.once('exit', resolve));
    await producer.send(`${WARM}/x`, {});

    const owed: Body[] = [];
    const failed: string[] = [];
    const sends: Promise<void>[] = [];
    const next = new Map(IDS.map((id) => [id, 0]));
    let sent = 0;
    const send = () => {
      const id = IDS[sent++ % IDS.length]!;
      const body = { id, n: next.get(id)! };
      next.set(id, body.n + 1);
      sends.push(producer.send(`${QUEUE}/${id}`, body).then(() => void owed.push(body), (error: WhiskerError) => void failed.push(`${id}:${body.n} ${error.code}`)));
    };
    // before the listener leaves: it gets them and acks them (its group then names no message)
    for (let k = 0; k < 200; k++) send();
    await Promise.all(sends);
    await until(() => consumed.lost(owed) === 0, 15_000, 'the first 200 consumed');
    await new Promise((resolve) => setTimeout(resolve, 500));
    away.kill('SIGKILL');
    await new Promise((resolve) => away.once('exit', resolve));
    const leftAt = owed.length;

    const fromA = a1.process!.output().length;
    const moving = whisker(['move', QUEUE, '--to', 'b', '-c', a1.configPath, '--timeout', '60'], { timeoutMs: 80_000 });
    // set a holds the hand-over back a second (stopped within its lease): set b takes sends aside
    // meanwhile, ~500 msg/s from now on (none before: the listener's group names no message)
    await a1.process!.waitFor(/handing the queue over/, fromA, 15_000);
    a1.process!.child.kill('SIGSTOP');
    const pacer = setInterval(() => {
      for (let k = 0; k < 5; k++) send();
    }, 10);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    b1.process!.child.kill('SIGKILL');
    await b1.process!.exited;
    a1.process!.child.kill('SIGCONT');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    b1.process = await startProcess(b1.configPath, { startTimeoutMs: 30_000 });
    const move = await moving;
    const afterMove = sent;
    await until(() => sent >= afterMove + 500, 30_000, '500 more sent after the move');

    // the listener name comes back (on set b now)
    const listened = new Receptions(IDS);
    const listener = await connect(LISTENER, hosts, { dedupeWindow: 0 });
    listener.on('error', (e) => errors.push(e));
    await listener.listen(`${QUEUE}/*`, (err, msg) => {
      if (err) return void handlerErrors.push(`listener ${err.code}: ${err.message}`);
      listened.note(msg as Body);
    }).ready;
    const lateListened = new Receptions(IDS);
    const lateListener = await connect(LATE, hosts, { dedupeWindow: 0 });
    lateListener.on('error', (e) => errors.push(e));
    await lateListener.listen(`${QUEUE}/*`, (err, msg) => {
      if (err) return void handlerErrors.push(`late listener ${err.code}: ${err.message}`);
      lateListened.note(msg as Body);
    }).ready;
    const back = sent;
    await until(() => sent >= back + 300, 30_000, '300 more sent after the listener came back');
    clearInterval(pacer);
    await Promise.all(sends);
    const sinceLeft = owed.filter((b) => b.n >= Math.floor(leftAt / IDS.length));
    await until(() => consumed.lost(owed) === 0 && lateListened.lost(owed) === 0 && listened.lost(sinceLeft) === 0, 20_000, 'every send consumed, and listened since the listener left').catch(() => undefined);

    const b1Log = b1.process!.output();
    const report = {
      sent, stored: owed.length, failed: failed.length, sinceLeft: sinceLeft.length,
      restoredOnB: Number(/"restored":(\d+)/.exec(b1Log)?.[1] ?? -1),
      handOver: /[^\n]*hand-over taken[^\n]*/.exec(b1Log)?.[0].replace(/.*"queue"/, '"queue"'),
      consumer: { lost: consumed.lost(owed), duplicates: consumed.duplicates(), orderBreaks: consumed.orderBreaks().length, firstBreaks: consumed.orderBreaks().slice(0, 3) },
      late: { lost: lateListened.lost(owed), orderBreaks: lateListened.orderBreaks().length, firstBreaks: lateListened.orderBreaks().slice(0, 3) },
      historyBreaks: await historyBreaks(producer, QUEUE, IDS, owed),
      listener: { got: listened.received, lost: listened.lost(sinceLeft), duplicates: listened.duplicates(), orderBreaks: listened.orderBreaks().length, firstBreaks: listened.orderBreaks().slice(0, 3) },
      handlerErrors: handlerErrors.slice(0, 5),
    };
    console.log(`move, set b killed -9 mid-move and restarted, a listener away: ${JSON.stringify(report)}`);
    expect(move.stdout + move.stderr).toContain(`moved ${QUEUE} from a to b`);
    expect(failed).toEqual([]);
    expect(handlerErrors).toEqual([]);
    expect(report.consumer.lost).toBe(0);
    expect(report.listener.lost).toBe(0);
    // what set b loaded at its restart waits behind the hand-over: order per id holds, delivered and replayed
    expect(report.consumer.orderBreaks).toBe(0);
    expect(report.listener.orderBreaks).toBe(0);
    expect(report.late.lost).toBe(0);
    expect(report.late.orderBreaks).toBe(0);
    expect(report.historyBreaks).toEqual([]);
    expect(errors.filter((e) => e.code === 'E_MOVED' || e.code === 'E_PROTOCOL')).toEqual([]);
    await Promise.all([producer.disconnect(), consumer.disconnect(), listener.disconnect(), lateListener.disconnect()]);
  }, 60_000);
});
