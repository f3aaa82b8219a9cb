import { describe, expect, test } from 'vitest';
import { type BrokerProcess, freePort, startProcess, writeConfig } from '../support/broker-process.js';
import { connect, tempDir, until } from '../support/harness.js';

/**
 * Issue 13 fault 4, with a real broker process: kill -9 right as a deliver frame is handled
 * and acked. The restarted broker may send those messages again (with nbRequeues unchanged when
 * the kill came before its record of the delivery was written); a client that acked them acks
 * the copies again, so the prefetch window never fills with copies held until requeueInterval.
 */
const CYCLES = 6;
const PER_CYCLE = 200;
const KILL_AT = 100; // the kill comes with this delivery of each cycle
const CATCH_UP_MS = 5_000;

describe('kill -9 during delivery (real broker process)', () => {
  test(`${CYCLES} kills as a delivery is acked: the consumer (prefetch 10) catches up within ${CATCH_UP_MS / 1000} s each time, requeueInterval being 100 s`, async () => {
    const port = await freePort();
    const dir = tempDir('whisker-restart-delivery-');
    const path = writeConfig(dir, { serviceId: 'crash', socketServer: { host: '127.0.0.1', port }, requeueInterval: 100, maxItemsInQueue: 1_000_000 });
    let broker: BrokerProcess = await startProcess(path);
    const host = `127.0.0.1:${port}@crash`;

    const received = new Map<number, number>();
    let killAt = -1;
    let deliveries = 0;
    const consumer = await connect('crash-worker', host);
    await consumer.consume('jobs/v1/1', { prefetch: 10 }, (err, msg, done) => {
      if (err) throw err;
      const seq = (msg as { seq: number }).seq;
      received.set(seq, (received.get(seq) ?? 0) + 1);
      done!();
      // the worst moment: the ack is queued, the frames after it may be on the wire
      if (++deliveries === killAt) broker.child.kill('SIGKILL');
    }).ready;
    // a second producer keeps the store's writer busy on another queue
    const busy = await connect('crash-busy-producer', host);
    let busyRunning = true;
    const busyLoop = (async () => {
      for (let n = 0; busyRunning; n++) await busy.send('load/v1/1', { n, pad: 'x'.repeat(200) }).catch(() => undefined);
    })();
    const producer = await connect('crash-producer', host, { sendTimeout: 60_000 });

    const catchUps: number[] = [];
    let seq = 0;
    try {
      for (let cycle = 0; cycle < CYCLES; cycle++) {
        killAt = deliveries + KILL_AT;
        const first = seq;
        await Promise.all(Array.from({ length: PER_CYCLE }, () => producer.send('jobs/v1/1', { seq: seq++ })));
        await broker.exited;
        broker = await startProcess(path);
        const restartedAt = performance.now();
        await until(() => [...Array(PER_CYCLE).keys()].every((i) => received.has(first + i)), CATCH_UP_MS, `cycle ${cycle + 1}: every message after the restart`);
        catchUps.push(Math.round(performance.now() - restartedAt));
      }
    } finally {
      busyRunning = false;
    }
    await busyLoop;
    const duplicated = [...received.values()].filter((n) => n > 1).length;
    console.log(`kill -9 during delivery x${CYCLES}: sent ${seq}, received ${received.size}, duplicated ${duplicated}, caught up after the restart in ${catchUps.join(', ')} ms`);
    expect(received.size).toBe(seq);
    expect(catchUps).toHaveLength(CYCLES);
  }, 120_000);
});
