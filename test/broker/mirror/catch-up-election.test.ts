import { describe, expect, test } from 'vitest';
import type { WhiskerClient } from '../../../src/client/client.js';
import { startProcess, whisker } from '../../support/broker-process.js';
import { type ElectedNode, electionCluster, nextMaster, offsets } from '../../support/election-cluster.js';
import { startEtcd } from '../../support/etcd.js';
import { connect, until } from '../../support/harness.js';
import { replayKeys, sendMany as sendManyTo } from '../../support/mirror-nodes.js';

/**
 * Outside check (atk27): with an election, a slave in the middle of its history catch-up must not
 * win when the master is killed -9 (SPEC §9: only a broker in step with the last master may win);
 * the winner replays every answered send, and the late slave then catches up from it.
 */
const CHANNEL = 'ev/v1/1';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const replayOf = (node: ElectedNode) => replayKeys(node, CHANNEL);
const sendMany = (producer: WhiskerClient, from: number, count: number, answered: number[]) => sendManyTo(producer, CHANNEL, from, count, answered);

function verdict(label: string, answered: number[], replay: number[]) {
  const seen = new Set(replay);
  const missing = answered.filter((k) => !seen.has(k));
  const outOfOrder = replay.filter((k, i) => i > 0 && k < replay[i - 1]!).length;
  console.log(`${label}: ${answered.length} answered, replay ${replay.length}: ${missing.length} missing (e.g. ${missing.slice(0, 5).join(',')}), ${replay.length - seen.size} twice, ${outOfOrder} out of order`);
  return { missing: missing.length, twice: replay.length - seen.size };
}

// opt-in with the other catch-up attacks (catch-up-attacks.test.ts says why)
describe.runIf(process.env.ATTACKS === '1')('atk27: election while a slave catches up (real etcd, real processes)', () => {
  test('the master killed -9 while a slave is mid-catch-up: the in-step slave wins, replays every answered send, and the late one catches up from it', async () => {
    const etcd = await startEtcd();
    const nodes = await electionCluster([etcd.url], ['a', 'b', 'c'], () => ({ defaultPolicy: 'allow', channels: { 'ev/v1': { retention: { seconds: 3600 } } } }));
    try {
      const first = await nextMaster(nodes);
      const others = nodes.filter((n) => n !== first);
      await Promise.all(others.map((n) => n.process!.waitFor(/in step with the master/, 0, 30_000)));
      const [inStep, late] = others as [ElectedNode, ElectedNode];
      const hosts = nodes.map((n) => n.spec);
      const producer = await connect('el-producer', hosts, { sendTimeout: 30_000 });
      const consumed = new Set<number>();
      const consumer = await connect('el-worker', hosts);
      await consumer.consume(CHANNEL, { prefetch: 100 }, (err, msg, done) => {
        if (err) throw err;
        consumed.add((msg as { k: number }).k);
        done!();
      }).ready;
      const answered: number[] = [];
      await sendMany(producer, 0, 500, answered);
      late.process!.child.kill('SIGKILL');
      await late.process!.exited;
      await sendMany(producer, 500, 30_000, answered);
      await until(() => answered.every((k) => consumed.has(k)), 60_000, 'all consumed');
      late.process = await startProcess(late.configPath, { startTimeoutMs: 30_000 });
      await sleep(300);
      const midCatchUp = !/in step with the master/.test(late.process.output());
      const from = offsets(nodes);
      first.process!.child.kill('SIGKILL');
      await first.process!.exited;
      const winner = await nextMaster(nodes, from, 30_000);
      console.log(`master ${first.serviceId} killed -9 with ${late.serviceId} ${midCatchUp ? 'mid-catch-up' : 'already in step'}; ${winner.serviceId} won`);
      await late.process.waitFor(/in step with the master/, from.get(late) ?? 0, 60_000);
      await sendMany(producer, 30_500, 1_000, answered);
      await until(() => answered.every((k) => consumed.has(k)), 60_000, 'all consumed after failover');
      await sleep(500);
      const fromWinner = await replayOf(winner);
      const fromOther = await replayOf(winner === inStep ? late : inStep);
      for (const n of [inStep, late]) {
        const l = await whisker(['list', '-c', n.configPath, '--json']);
        console.log(`whisker list ${n.serviceId}: ${JSON.stringify(JSON.parse(l.stdout).histories)}`);
      }
      await Promise.all([producer.disconnect(), consumer.disconnect()]);
      if (midCatchUp) expect(winner).toBe(inStep);
      expect(verdict('winner', answered, fromWinner)).toEqual({ missing: 0, twice: 0 });
      expect(verdict('other slave', answered, fromOther)).toEqual({ missing: 0, twice: 0 });
    } finally {
      for (const n of nodes) n.process?.child.kill('SIGKILL');
      await etcd.kill();
    }
  }, 300_000);
});
