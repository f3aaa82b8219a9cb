import { describe, expect, test } from 'vitest';
import { electionCluster, nextMaster, offsets } from '../../support/election-cluster.js';
import { startProcess } from '../../support/broker-process.js';
import { startEtcd } from '../../support/etcd.js';
import { connect } from '../../support/harness.js';

/**
 * Issue 27 (found by #31's checkers, atk31e slave-nomove): a slave killed -9 while a connection
 * pipelines numbered sends to every broker misses what is sent while it is down; restarted, it
 * takes the connection's new sends from the client at once and the missed ones from its master's
 * sync a little later. Queued as they arrived, the older sends came after newer ones: promoted
 * soon after (here 1 s after it says `in step`), it delivered them in that order. Expected (SPEC
 * §7): a consumer subscribing after the failover gets the connection's sends in the order sent.
 */
const CHANNEL = 'jobs/v1/x';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a slave restarted, in step, then promoted (issue 27)', () => {
  test('queues what its sync brought before the sends it took from clients meanwhile', async () => {
    const etcd = await startEtcd();
    const nodes = await electionCluster([etcd.url], ['a', 'b'], () => ({ heartbeatTimeout: 2 }));
    try {
      const master = await nextMaster(nodes);
      const slave = nodes.find((n) => n !== master)!;
      await slave.process!.waitFor(/in step with the master/, 0, 15_000);
      const producer = await connect('cr-producer', nodes.map((n) => n.spec), { sendTimeout: 5_000, maxBufferedMessages: 100_000 });
      const answers: string[] = [];
      const pending: Array<Promise<void>> = [];
      let running = true;
      const loop = (async () => {
        for (let n = 0; running; n++) {
          pending.push(producer.send(CHANNEL, { n }).then(
            () => void (answers[n] = 'OK'),
            (e: { code: string }) => void (answers[n] = e.code),
          ));
          await sleep(2);
        }
      })();
      await sleep(1_000);
      slave.process!.child.kill('SIGKILL');
      await slave.process!.exited;
      await sleep(2_000);
      slave.process = await startProcess(slave.configPath, { startTimeoutMs: 30_000 });
      await slave.process.waitFor(/in step with the master/, 0, 15_000);
      await sleep(1_000);
      const from = offsets(nodes);
      master.process!.child.kill('SIGKILL');
      await master.process!.exited;
      expect(await nextMaster(nodes, from, 20_000)).toBe(slave);
      await sleep(1_000);
      running = false;
      await loop;
      await Promise.all(pending);
      await producer.disconnect();

      // nobody consumed until now: the promoted slave delivers its whole queue, in its order
      const firsts: number[] = [];
      const seen = new Set<number>();
      const consumer = await connect('cr-consumer', [slave.spec]);
      await consumer.consume(CHANNEL, { prefetch: 200 }, (error, data, done) => {
        const n = (data as { n: number } | undefined)?.n;
        if (!error && n !== undefined && !seen.has(n)) {
          seen.add(n);
          firsts.push(n);
        }
        done!();
      }).ready;
      const ok = answers.map((a, n) => [a, n] as const).filter(([a]) => a === 'OK').map(([, n]) => n);
      for (const deadline = Date.now() + 20_000; Date.now() < deadline && !ok.every((n) => seen.has(n)); ) await sleep(200);
      await consumer.disconnect();
      let breaks = 0;
      let example = '';
      let highest = -1;
      for (const n of firsts) {
        if (n < highest) {
          breaks++;
          example ||= `${n} after ${highest}`;
        }
        highest = Math.max(highest, n);
      }
      const lines = slave.process.output().split('\n').filter((l) => /catching up|in step with the master|delivering/.test(l));
      console.log(`restarted slave promoted: ${ok.length} OK of ${answers.length}; consumer got ${firsts.length}, ${breaks} out of order${example ? ` (first: ${example})` : ''}\n${lines.map((l) => l.slice(0, 260)).join('\n')}`);
      expect(ok.filter((n) => !seen.has(n)), 'answered OK, never delivered').toEqual([]);
      expect(breaks, example).toBe(0);
    } finally {
      for (const node of nodes) node.process?.child.kill('SIGKILL');
      await etcd.kill();
    }
  }, 90_000);
});
