import { describe, expect, test } from 'vitest';
import { connect, freePort, tempDir } from '../../support/harness.js';
import { type BrokerProcess, startProcess, writeConfig } from '../../support/broker-process.js';

/**
 * Issue 27 item 4 (SPEC §7 replayable events, §8 durability): a real broker process killed with
 * SIGKILL again and again under pipelined sends to a retained channel; the producer stays
 * connected and sends again what was in flight. Every send answered OK is in the replay, once.
 */
const KILLS = 5;

describe('history across kill -9 with sends in flight', () => {
  test(`every send answered OK is in the history exactly once after ${KILLS} kills`, async () => {
    const dir = tempDir();
    const port = await freePort();
    const config = writeConfig(dir, { socketServer: { host: '127.0.0.1', port }, defaultPolicy: 'allow', maxItemsInQueue: 100_000, channels: { 'ev/v1': { retention: { seconds: 3600 } } } });
    let current: BrokerProcess = await startProcess(config);
    const producer = await connect('producer', current.hostSpec, { sendTimeout: 60_000 });
    const answered: number[] = [];
    const failed: number[] = [];
    let n = 0;
    let stop = false;
    const sending = (async () => {
      const inFlight = new Set<Promise<void>>();
      while (!stop) {
        // a frame of 25 every turn, up to 500 sends in flight
        for (let k = 0; k < 25; k++) {
          const mine = n++;
          const p: Promise<void> = producer.send('ev/v1/k', { k: mine }).then(
            () => void answered.push(mine),
            () => void failed.push(mine),
          ).finally(() => inFlight.delete(p));
          inFlight.add(p);
        }
        while (inFlight.size >= 500) await Promise.race(inFlight);
        await new Promise((resolve) => setImmediate(resolve));
      }
      await Promise.all(inFlight);
    })();
    try {
      for (let kill = 0; kill < KILLS; kill++) {
        const target = answered.length + 1_500;
        for (let waited = 0; answered.length < target && waited < 30_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
        current.child.kill('SIGKILL');
        await current.exited;
        current = await startProcess(config);
      }
      const target = answered.length + 500;
      for (let waited = 0; answered.length < target && waited < 30_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
      stop = true;
      await sending;
      await producer.disconnect();
      const reader = await connect('reader', current.hostSpec);
      const got: number[] = [];
      await reader.replay('ev/v1/*', {}, (_err, msg) => void got.push((msg as { k: number }).k)).done;
      await reader.disconnect();
      const copies = new Map<number, number>();
      for (const k of got) copies.set(k, (copies.get(k) ?? 0) + 1);
      const missing = answered.filter((k) => !copies.has(k));
      const twice = [...copies].filter(([, c]) => c > 1).map(([k]) => k);
      const unanswered = got.filter((k) => !answered.includes(k));
      console.log(`${KILLS} kills: ${n} sent, ${answered.length} answered OK, ${failed.length} failed; replay ${got.length}: missing ${missing.length}, twice ${twice.length}, never answered ${unanswered.length}`);
      expect(failed).toEqual([]);
      expect(missing).toEqual([]);
      expect(twice).toEqual([]);
      expect(got.length).toBe(answered.length);
    } finally {
      stop = true;
      current.child.kill('SIGKILL');
      await current.exited;
    }
  }, 180_000);
});
