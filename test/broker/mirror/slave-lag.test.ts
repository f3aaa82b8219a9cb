import { describe, expect, test } from 'vitest';
import type { WhiskerError } from '../../../src/protocol/errors.js';
import { type BrokerProcess, freePort, startProcess, writeConfig } from '../../support/broker-process.js';
import { connect, tempDir, until } from '../../support/harness.js';
import { parseMetrics, valueOf } from '../../support/prom.js';

/**
 * A slave that cannot keep up with its master (issue 27's heap check): the slave, a real process
 * given 5 ms of CPU in each 100 ms (SIGSTOP/SIGCONT), under a steady 3,000 messages/s. Its
 * backlog stays within limits.maxMirrorBacklogBytes (it stops reading its master), the master
 * owes its link at most limits.maxMirrorLinkBytes (past it the link is closed, and the slave
 * syncs again), and once the slave is in step, a failover to it loses no answered send.
 */
const MiB = 1_048_576;
const BACKLOG_BYTES = MiB;
/** at least what a paced sync may owe by itself: soft bound + a 4 MiB chunk + 2 × maxPayloadBytes */
const LINK_BYTES = 6 * MiB;
const MAX_PAYLOAD = 256 * 1024;
/** a bound may be passed by what was read before the pause took effect: a frame or a socket read */
const SLACK = MiB;
const STARVE_MS = 25_000;
/** of each 100 ms, the slave runs this long */
const RUN_MS = 5;
const PER_TICK = 30; // every 10 ms: 3,000 messages/s
const BODY = 'x'.repeat(400);

interface Node {
  readonly serviceId: string;
  readonly port: number;
  readonly managementPort: number;
  readonly dir: string;
  readonly spec: string;
  process: BrokerProcess | null;
}

async function node(serviceId: string): Promise<Node> {
  const port = await freePort();
  return { serviceId, port, managementPort: await freePort(), dir: tempDir(`whisker-lag-${serviceId}-`), spec: `127.0.0.1:${port}@${serviceId}`, process: null };
}

function configure(n: Node, other: Node, isMaster: boolean): string {
  return writeConfig(n.dir, {
    serviceId: n.serviceId,
    isMaster,
    peers: [other.spec],
    socketServer: { host: '127.0.0.1', port: n.port },
    management: { port: n.managementPort },
    maxItemsInQueue: 1_000_000,
    limits: { maxPayloadBytes: MAX_PAYLOAD, maxBufferedBytesPerConnection: MiB, maxMirrorBacklogBytes: BACKLOG_BYTES, maxMirrorLinkBytes: LINK_BYTES },
  });
}

/** one scrape, or null when the broker did not answer in time (stopped) */
async function scrape(n: Node): Promise<ReturnType<typeof parseMetrics> | null> {
  try {
    const res = await fetch(`http://127.0.0.1:${n.managementPort}/metrics`, { signal: AbortSignal.timeout(3_000) });
    return parseMetrics(await res.text());
  } catch {
    return null;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a slave that cannot keep up with its master', () => {
  test('starved of CPU under 3,000 messages/s: its backlog and the master\'s buffer for it stay bounded, the link is cut and synced again, a failover to it loses nothing', async () => {
    const a = await node('a');
    const b = await node('b');
    a.process = await startProcess(configure(a, b, true));
    b.process = await startProcess(configure(b, a, false));
    await b.process.waitFor(/in step with the master/);
    const hosts = [a.spec, b.spec];

    const deliveries = new Map<number, number>();
    const consumer = await connect('lag-worker', hosts, { dedupeWindow: 0 });
    await consumer.consume('lag/v1/1', { prefetch: 200 }, (err, msg, done) => {
      if (err) throw err;
      const seq = (msg as { seq: number }).seq;
      deliveries.set(seq, (deliveries.get(seq) ?? 0) + 1);
      done!();
    }).ready;
    const producer = await connect('lag-producer', hosts, { sendTimeout: 30_000 });
    const succeeded = new Set<number>();
    const failed: string[] = [];
    const sends: Array<Promise<void>> = [];
    let sent = 0;
    const send = (seq: number) =>
      new Promise<void>((resolve) =>
        producer.send('lag/v1/1', { seq, body: BODY }, (err: WhiskerError | null) => {
          if (!err) succeeded.add(seq);
          else failed.push(`${seq}: ${err.code}`);
          resolve();
        }),
      );
    const pacer = setInterval(() => {
      for (let i = 0; i < PER_TICK; i++) sends.push(send(sent++));
    }, 10);

    // the slave runs RUN_MS in each 100 ms; both brokers are scraped meanwhile
    const slavePid = b.process.child.pid!;
    let starving = true;
    const starve = (async () => {
      while (starving) {
        process.kill(slavePid, 'SIGSTOP');
        await sleep(100 - RUN_MS);
        process.kill(slavePid, 'SIGCONT');
        await sleep(RUN_MS);
      }
    })();
    const worst = { lagMessages: 0, lagBytes: 0, owedBytes: 0, paused: 0, slaveHeap: 0 };
    const sample = async () => {
      const [ms, mm] = await Promise.all([scrape(b), scrape(a)]);
      if (ms) {
        worst.lagMessages = Math.max(worst.lagMessages, valueOf(ms, 'whisker_peer_lag_messages', { peer: 'a' }) ?? 0);
        worst.lagBytes = Math.max(worst.lagBytes, valueOf(ms, 'whisker_peer_lag_bytes', { peer: 'a' }) ?? 0);
        worst.paused = Math.max(worst.paused, valueOf(ms, 'whisker_peer_reading_paused', { peer: 'a' }) ?? 0);
        worst.slaveHeap = Math.max(worst.slaveHeap, valueOf(ms, 'nodejs_heap_size_used_bytes') ?? 0);
      }
      if (mm) worst.owedBytes = Math.max(worst.owedBytes, valueOf(mm, 'whisker_peer_owed_bytes', { peer: 'b' }) ?? 0);
    };
    // STARVE_MS, and on until the master has cut the link once (a loaded machine sends slower than
    // 3,000 messages/s: 27,360 in 25 s at load 20, and no cut yet), 90 s at most
    const startedAt = Date.now();
    const cut = () => /"msg":"mirror link closed: the mirror does not keep up/.test(a.process!.output());
    while (Date.now() - startedAt < STARVE_MS || (!cut() && Date.now() - startedAt < 90_000)) await Promise.all([sample(), sleep(200)]);
    const starvedMs = Date.now() - startedAt;
    starving = false;
    await starve;
    process.kill(slavePid, 'SIGCONT');
    clearInterval(pacer);
    await Promise.all(sends);
    const masterLog = a.process.output();
    const cuts = masterLog.match(/^.*"msg":"mirror link closed: the mirror does not keep up.*$/gm) ?? [];

    // in step again, nothing left to apply: then the master dies and the slave is promoted
    let inStep = false;
    for (let i = 0; i < 300 && !inStep; i++) {
      const m = await scrape(b);
      inStep = m !== null && valueOf(m, 'whisker_peer_in_step', { peer: 'a' }) === 1 && valueOf(m, 'whisker_peer_lag_messages', { peer: 'a' }) === 0;
      if (!inStep) await sleep(200);
    }
    expect(inStep, 'the slave in step with nothing left to apply').toBe(true);
    a.process.child.kill('SIGKILL');
    await a.process.exited;
    const from = b.process.output().length;
    configure(b, a, true); // the file watch reloads it
    await b.process.waitFor(/delivering: this broker acts as master/, from);
    await until(() => [...succeeded].every((seq) => deliveries.has(seq)), 60_000, `every answered send consumed (${[...succeeded].filter((seq) => !deliveries.has(seq)).length} missing)`);
    const lost = [...succeeded].filter((seq) => !deliveries.has(seq)).length;
    console.log(
      `slave lag: ${sent} sent in ${(starvedMs / 1000).toFixed(0)} s, ${succeeded.size} answered, ${failed.length} failed; slave backlog at most ${worst.lagMessages} messages, ` +
        `${(worst.lagBytes / MiB).toFixed(2)} MiB (bound ${BACKLOG_BYTES / MiB} MiB), reading paused: ${worst.paused === 1}, heap used at most ${(worst.slaveHeap / MiB).toFixed(1)} MiB; master owed it at most ` +
        `${(worst.owedBytes / MiB).toFixed(2)} MiB (bound ${LINK_BYTES / MiB} MiB), links cut: ${cuts.length}; lost after failover ${lost}\n${cuts[0] ?? ''}`,
    );
    expect(worst.lagBytes).toBeLessThanOrEqual(BACKLOG_BYTES + SLACK);
    // whether the slave itself paused reading depends on the machine: starved, it may apply all it
    // read each time it runs and leave the backlog in TCP and the master's buffer, which the cut bounds
    // (seen in CI: backlog 0, one cut); the pause itself: test/link/pause-reading.test.ts
    expect(worst.owedBytes).toBeLessThanOrEqual(LINK_BYTES + SLACK);
    expect(cuts.length).toBeGreaterThan(0);
    expect(cuts[0]).toMatch(/"peer":"b"/);
    expect(cuts[0]).toMatch(new RegExp(`"limitBytes":${LINK_BYTES}`));
    expect(failed).toEqual([]);
    expect(lost).toBe(0);
  }, 240_000);
});
