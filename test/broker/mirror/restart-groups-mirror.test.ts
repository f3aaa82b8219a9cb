import { afterAll, describe, expect, test } from 'vitest';
import type { WhiskerClient } from '../../../src/client/client.js';
import { startProcess } from '../../support/broker-process.js';
import { connect } from '../../support/harness.js';
import { configureMirror, mirrorNodes } from '../../support/mirror-nodes.js';
import { ProxyLinks } from '../../nemesis/proxy.js';

/**
 * Issue 27, the 30-minute nemesis (seed 2027): the master killed -9 and restarted, the sends
 * made while it was down re-sent to it by the producers and answered OK by it, and the
 * listener's link to it back a few seconds after the consumers'. The restarted master had
 * forgotten the listener's group (groupHold lived in memory only): what it accepted before the
 * listener subscribed again got a record for the consumer group alone, and the listener never
 * got 1,475 of them. SPEC §7: every name gets every message. Real broker processes (master and
 * slave, no election); the listener's link to the master goes through a proxy held cut until
 * after the restart.
 */
const CHANNEL = 'jobs/v1/1';
const until = async (predicate: () => boolean, timeoutMs: number): Promise<boolean> => {
  const end = Date.now() + timeoutMs;
  while (!predicate() && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
  return predicate();
};

describe('a master killed -9 and restarted keeps its recipient groups (groupHold)', () => {
  const proxy = new ProxyLinks();
  afterAll(() => proxy.destroy());

  test('the listener, back after the consumers, gets every send the restarted master answered', async () => {
    const [m, s] = await mirrorNodes('restart-groups', ['m', 's']);
    const nodes = [m!, s!];
    const mPath = configureMirror(m!, nodes, true, { heartbeatTimeout: 2, requeueInterval: 30 });
    const sPath = configureMirror(s!, nodes, false, { heartbeatTimeout: 2, requeueInterval: 30 });
    m!.process = await startProcess(mPath);
    s!.process = await startProcess(sPath);
    await s!.process.waitFor(/in step with the master/, 0, 20_000);

    const viaProxy = await proxy.add('listener', 'm', m!.port);
    const listened = new Map<number, number>();
    const consumed = new Map<number, number>();
    const count = (into: Map<number, number>, k: number) => into.set(k, (into.get(k) ?? 0) + 1);
    const listener = await connect('rg-listener', [`127.0.0.1:${viaProxy}@m`, s!.spec], { connectTimeout: 10_000 });
    await listener.listen(CHANNEL, (err, msg) => {
      if (!err) count(listened, (msg as { k: number }).k);
    }).ready;
    const workers: WhiskerClient[] = [];
    for (let i = 0; i < 2; i++) {
      const worker = await connect('rg-worker', [m!.spec, s!.spec]);
      await worker.consume(CHANNEL, { prefetch: 5 }, (err, msg, done) => {
        if (err) return;
        count(consumed, (msg as { k: number }).k);
        done();
      }).ready;
      workers.push(worker);
    }
    const producer = await connect('rg-producer', [m!.spec, s!.spec], { sendTimeout: 60_000 });
    const ok: number[] = [];
    const sendBatch = (from: number, n: number) =>
      Promise.allSettled(Array.from({ length: n }, (_, i) => producer.send(CHANNEL, { k: from + i }).then(() => ok.push(from + i))));

    await sendBatch(0, 100);
    expect(await until(() => listened.size === 100 && consumed.size === 100, 10_000)).toBe(true);

    // the listener's link to the master stays cut past the restart; the master is killed -9
    proxy.cut('listener', 'm');
    m!.process.child.kill('SIGKILL');
    await m!.process.exited;
    const whileDown = sendBatch(100, 300); // stored by the slave, answered by nobody yet
    await new Promise((r) => setTimeout(r, 500));
    m!.process = await startProcess(mPath);
    // the producer re-sends to the restarted master, the workers subscribe again; the listener not yet
    await new Promise((r) => setTimeout(r, 1_500));
    const afterRestart = sendBatch(400, 300);
    await Promise.all([whileDown, afterRestart]);
    await new Promise((r) => setTimeout(r, 1_000));
    proxy.heal('listener', 'm');

    await until(() => ok.every((k) => listened.has(k) && consumed.has(k)), 20_000);
    const listenerLost = ok.filter((k) => !listened.has(k));
    const consumerLost = ok.filter((k) => !consumed.has(k));
    console.log(`answered ${ok.length} of 700; listener lost ${listenerLost.length}${listenerLost.length ? ` (${listenerLost.slice(0, 3).join(', ')}..${listenerLost.at(-1)})` : ''}, consumers lost ${consumerLost.length}`);
    expect(ok.length).toBe(700);
    expect({ listenerLost: listenerLost.length, consumerLost: consumerLost.length }).toEqual({ listenerLost: 0, consumerLost: 0 });
  }, 60_000);
});
