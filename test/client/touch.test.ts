import '../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { describe, expect, test } from 'vitest';
import type { DeliveryInfo, Done } from '../../src/client/types.js';
import { broker, connect } from '../support/harness.js';

/**
 * issue #29 item 12 (SPEC §7, NSQ's TOUCH): a consumer on a job longer than `requeueInterval`
 * extends its ack deadline with `info.touch()`; each touch gives the delivery `requeueInterval`
 * again, up to `maxTouchSeconds` after it was delivered.
 */
interface Seen {
  at: number;
  nbRequeues: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function job(channels: Record<string, unknown>, work: (info: DeliveryInfo, done: Done) => Promise<void>, watchMs: number): Promise<Seen[]> {
  const b = await broker({ channels });
  const c = await connect('worker', b.hostSpec);
  const seen: Seen[] = [];
  const started = Date.now();
  const handle = c.consume('jobs/v1/*', { prefetch: 2 }, (err, _msg, done, info) => {
    if (err) throw err;
    seen.push({ at: Date.now() - started, nbRequeues: info.nbRequeues });
    if (info.nbRequeues > 0) return done(); // a redelivery: ack it at once
    void work(info, done);
  });
  await handle.ready;
  await c.send('jobs/v1/1', { long: true });
  await sleep(watchMs);
  return seen;
}

describe('info.touch()', () => {
  test('requeueInterval 2 s: a 5 s job touched every second is delivered once', async () => {
    const seen = await job({ 'jobs/v1': { requeueInterval: 2 } }, async (info, done) => {
      for (let i = 0; i < 5; i++) {
        await sleep(1000);
        expect(info.touch()).toBe(true);
      }
      done();
      expect(info.touch()).toBe(false); // settled: nothing to extend
    }, 7000);
    expect(seen.map((s) => s.nbRequeues)).toEqual([0]);
  }, 20_000);

  test('a job that stops touching is delivered again requeueInterval after its last touch', async () => {
    const seen = await job({ 'jobs/v1': { requeueInterval: 2 } }, async (info) => {
      await sleep(1000);
      info.touch();
      await sleep(1000);
      info.touch(); // the last one, at ~2 s: the deadline is ~4 s
    }, 6000);
    expect(seen.map((s) => s.nbRequeues)).toEqual([0, 1]);
    expect(seen[1]!.at).toBeGreaterThan(3500);
  }, 20_000);

  test('touches do not hold a delivery past maxTouchSeconds', async () => {
    const seen = await job({ 'jobs/v1': { requeueInterval: 2, maxTouchSeconds: 3 } }, async (info) => {
      for (let i = 0; i < 10; i++) {
        await sleep(500);
        info.touch();
      }
    }, 5500);
    expect(seen.map((s) => s.nbRequeues)).toEqual([0, 1]);
    expect(seen[1]!.at).toBeLessThan(4000); // ~3 s after the delivery, not 2 s after the last touch
  }, 20_000);
});
