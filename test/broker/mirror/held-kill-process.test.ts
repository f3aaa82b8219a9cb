import { afterEach, describe, expect, test } from 'vitest';
import { startProcess } from '../../support/broker-process.js';
import { connect } from '../../support/harness.js';
import { configureMirror, type MirrorNode, mirrorNodes, replayKeys, stopMirrorNodes } from '../../support/mirror-nodes.js';
import { slowIoEnv } from '../../support/slow-io.js';

/**
 * Issue 27 item 4, outside check atk27j F1 (the final master lacked 2,508 sends it had answered
 * OK), with real broker processes. A master still catching up (started as configured master, its
 * peer b frozen: it waits out its 5 s bound for b's offer) holds the history records of its
 * clients' copies in memory, answered OK meanwhile. When the hold ends they are queued, delivered
 * and acked (their log records go) while its history writes them: on a slow disk (every synced
 * write 500 ms, test/nemesis/slowio.c) and with small segments (retention.maxBytes 4 MiB: 512 KiB
 * each, one synced write each) that write lasts seconds. Killed -9 then, the restarted master
 * lacked in its replay every send whose removal reached its log first (its restart repairs only
 * from what the log still holds). Since: the records held are journaled (held.journal).
 */
const CHANNEL = 'hk/v1/x';
const N = 1_500;
let nodes: MirrorNode[] = [];

afterEach(async () => {
  await stopMirrorNodes(nodes);
  nodes = [];
});

describe('a master killed -9 while writing the records it held while catching up (real processes)', () => {
  test('its replay after the restart holds every send it answered OK, once', async () => {
    nodes = await mirrorNodes('held-kill', ['a', 'b']);
    const [a, b] = nodes as [MirrorNode, MirrorNode];
    const extra = { channels: { 'hk/v1': { retention: { maxBytes: 4 * 1_048_576 } } }, maxItemsInQueue: 100_000 };
    b.process = await startProcess(configureMirror(b, nodes, false, extra));
    b.process.child.kill('SIGSTOP');
    a.process = await startProcess(configureMirror(a, nodes, true, extra), { env: slowIoEnv(500_000), startTimeoutMs: 60_000 });
    await a.process.waitFor(/master while catching up/, 0, 30_000);

    const consumer = await connect('hk-consumer', a.spec);
    const got = new Set<number>();
    await consumer.consume(CHANNEL, { prefetch: 5_000 }, (err, msg, done) => {
      if (err) throw err;
      got.add((msg as { k: number }).k);
      done!();
    }).ready;
    const producer = await connect('hk-producer', a.spec, { sendTimeout: 30_000 });
    const answered: number[] = [];
    const pad = 'x'.repeat(2_000);
    const outcomes = await Promise.allSettled(Array.from({ length: N }, (_, k) => producer.send(CHANNEL, { k, pad })));
    outcomes.forEach((o, k) => o.status === 'fulfilled' && answered.push(k));
    await producer.disconnect();
    const heldAll = !/held while catching up are queued/.test(a.process.output());

    // the hold ends (5 s): the copies are queued, delivered, acked; their removals reach the log
    // (a synced write or two) long before the history's 6-7 synced writes of them are done
    await a.process.waitFor(/held while catching up are queued/, 0, 30_000);
    for (let waited = 0; got.size < answered.length && waited < 20_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    a.process.child.kill('SIGKILL');
    await a.process.exited;
    await consumer.disconnect().catch(() => undefined);

    // restarted (its disk fast again), b still frozen: it waits for b's offer again, then replays
    a.process = await startProcess(configureMirror(a, nodes, true, extra), { startTimeoutMs: 30_000 });
    const made = /.*history made whole after a stop.*/.exec(a.process.output())?.[0] ?? 'no repair logged';
    const replayed = await replayKeys(a, CHANNEL);
    const missing = answered.filter((k) => !replayed.includes(k));
    const twice = replayed.filter((k, at) => replayed.indexOf(k) !== at);
    console.log(`held-kill: ${answered.length} of ${N} answered OK (all while held: ${heldAll}), ${got.size} delivered and acked before the kill; restart: ${made}; replay ${replayed.length}: missing ${missing.length}, twice ${twice.length}`);
    expect(answered.length).toBe(N);
    expect(got.size, 'every send delivered and acked before the kill').toBe(N);
    expect({ missing: missing.length, twice: twice.length }).toEqual({ missing: 0, twice: 0 });
  }, 120_000);
});
