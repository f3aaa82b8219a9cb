import { describe, expect, test } from 'vitest';
import { startProcess } from '../../support/broker-process.js';
import { connect, freePort } from '../../support/harness.js';
import { configureMirror, type MirrorNode, mirrorNodes, replayKeys, sendMany } from '../../support/mirror-nodes.js';
import { parseMetrics, valueOf } from '../../support/prom.js';
import { slowIoEnv } from '../../support/slow-io.js';

/**
 * A slave restarted under steady traffic on a slow disk (issue 27, nemesis seed 27: two slaves
 * 110,000-144,000 messages behind their master for minutes). Its history catch-up (20,000
 * records) waited behind its own clients' copies, each one synced write of the history, queued
 * faster than the disk wrote them; then the feed the master kept during the sync was applied a
 * frame at a time, each frame's writes after the last one's, slower than the traffic came. Here
 * every synced write of the slave waits 15 ms (test/nemesis/slowio.c, LD_PRELOAD) under ~600
 * messages/s: it comes into step, its lag drains, and its history is its master's, in order.
 */
const FEED = 'feed/v1/1';
const JOBS = 'jobs/v1/1';
const HISTORY = 20_000;
const SLOW_US = 15_000;
/** generous: with the fix ~10 s on a loaded machine; before it, never (the queue only grew) */
const IN_STEP_WITHIN_MS = 90_000;
/** drained: once in step, the lag goes under this at some point (before the fix it only grew) */
const DRAINED = 1_000;
const DRAIN_WITHIN_MS = 60_000;

type Node = MirrorNode & { managementPort: number };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const configure = (node: Node, all: readonly Node[], isMaster: boolean): string =>
  configureMirror(node, all, isMaster, { management: { port: node.managementPort }, channels: { 'feed/v1': { retention: { seconds: 3600 } }, 'jobs/v1': { prefetch: 5 } } });

/** the slave's lag behind its master (whisker_peer_lag_messages) and whether it is in step, or null while it does not answer */
async function lagOf(node: Node, master: string): Promise<{ lag: number; inStep: boolean } | null> {
  try {
    const res = await fetch(`http://127.0.0.1:${node.managementPort}/metrics`, { signal: AbortSignal.timeout(3_000) });
    const metrics = parseMetrics(await res.text());
    return { lag: valueOf(metrics, 'whisker_peer_lag_messages', { peer: master }) ?? 0, inStep: valueOf(metrics, 'whisker_peer_in_step', { peer: master }) === 1 };
  } catch {
    return null;
  }
}

describe('a slave restarted under traffic on a slow disk, with a long history to catch up (real broker processes)', () => {
  test('it comes into step, applies the feed kept meanwhile faster than the traffic comes, and replays what its master does', async () => {
    const env = slowIoEnv(SLOW_US);
    const nodes = (await mirrorNodes('catch-up-backlog', ['a', 'b'])) as Node[];
    for (const n of nodes) n.managementPort = await freePort();
    const [a, b] = nodes as [Node, Node];
    a.process = await startProcess(configure(a, nodes, true));
    b.process = await startProcess(configure(b, nodes, false), { env });
    await b.process.waitFor(/in step with the master/, 0, 30_000);
    const hosts = [a.spec, b.spec];
    const producer = await connect('backlog-producer', hosts, { sendTimeout: 60_000 });
    const worker = await connect('backlog-worker', hosts);
    await worker.consume(JOBS, { prefetch: 50 }, (err, _msg, done) => {
      if (err) throw err;
      done!();
    }).ready;

    // the history b lacks: sent while it is away
    b.process.child.kill('SIGKILL');
    await b.process.exited;
    const answered: number[] = [];
    await sendMany(producer, FEED, 0, HISTORY, answered);

    // ~600 messages/s while b comes back: half retained (client copies to both brokers), half consumed
    let k = HISTORY;
    const sends: Array<Promise<unknown>> = [];
    const pacer = setInterval(() => {
      for (let i = 0; i < 3; i++) {
        const n = k++;
        sends.push(producer.send(FEED, { k: n }).then(() => answered.push(n), () => undefined));
        sends.push(producer.send(JOBS, { k: n }).catch(() => undefined));
      }
    }, 10);
    const started = Date.now();
    b.process = await startProcess(configure(b, nodes, false), { env });
    let inStepAfter = -1;
    let drainedAfter = -1;
    let worst = 0;
    const samples: string[] = [];
    try {
      while (Date.now() - started < IN_STEP_WITHIN_MS + DRAIN_WITHIN_MS) {
        const state = await lagOf(b, 'a');
        const elapsed = Date.now() - started;
        if (state) {
          samples.push(`${(elapsed / 1000).toFixed(0)}s:${state.lag}`);
          if (inStepAfter < 0 && state.inStep) inStepAfter = elapsed;
          if (inStepAfter >= 0) worst = Math.max(worst, state.lag);
          if (inStepAfter >= 0 && state.lag < DRAINED) {
            drainedAfter = elapsed;
            break;
          }
        }
        if (inStepAfter < 0 && elapsed > IN_STEP_WITHIN_MS) break;
        if (inStepAfter >= 0 && elapsed - inStepAfter > DRAIN_WITHIN_MS) break;
        await sleep(500);
      }
    } finally {
      clearInterval(pacer);
    }
    console.log(`slave on a slow disk (${SLOW_US / 1000} ms per synced write), ${HISTORY} records to catch up, ~600 messages/s: in step after ${inStepAfter} ms, lag under ${DRAINED} after ${drainedAfter} ms (at most ${worst} once in step); lag every 0.5 s: ${samples.join(' ')}`);
    expect(inStepAfter, 'in step with the master').toBeGreaterThanOrEqual(0);
    expect(drainedAfter, `the lag under ${DRAINED} within ${DRAIN_WITHIN_MS / 1000} s of being in step`).toBeGreaterThanOrEqual(0);

    // the traffic over and applied: b's history is a's, every answered send once, in order
    await Promise.all(sends);
    for (let i = 0; i < 120; i++) {
      const state = await lagOf(b, 'a');
      if (state?.inStep && state.lag === 0) break;
      await sleep(500);
    }
    await sleep(500);
    const [fromMaster, fromSlave] = [await replayKeys(a, FEED), await replayKeys(b, FEED)];
    await Promise.all([producer.disconnect(), worker.disconnect()]);
    const seen = new Set(fromSlave);
    expect(answered.filter((n) => !seen.has(n)).length, 'answered sends missing from the slave\'s history').toBe(0);
    expect(fromSlave.length - seen.size, 'records twice').toBe(0);
    expect(fromSlave).toEqual(fromMaster);
  }, 240_000);
});
