import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { broker, connect, until } from '../../support/harness.js';
import { parseMetrics, samplesOf, valueOf } from '../../support/prom.js';

/**
 * Issue 27 items 5 and 6 (docs/configuration.md#retention): `maxBytes` holds whatever the
 * batching of the sends, on disk and in whisker_history_bytes; `seconds` empties an expired
 * history at the periodic trim, without a new send. Real broker, real files.
 */
const scrape = async (port: number | null) => parseMetrics(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());

/** bytes of the channel's segment files now (a file trimmed while we look counts 0) */
function segmentBytes(dir: string): number {
  let total = 0;
  for (const name of (() => { try { return readdirSync(dir); } catch { return []; } })()) {
    if (!name.endsWith('.seg')) continue;
    try {
      total += statSync(join(dir, name)).size;
    } catch {
      // trimmed meanwhile
    }
  }
  return total;
}

describe('retention bounds', () => {
  test('maxBytes holds for pipelined sends (500, then 1,000 in flight at once): on disk, in the metric, at every moment', async () => {
    const maxBytes = 65_536;
    const b = await broker({ defaultPolicy: 'allow', maxItemsInQueue: 10_000, management: { port: 0 }, channels: { 'ev/v1': { retention: { maxBytes } } } });
    const dir = join(b.config.dataDirectory, 'history', 'ev@v1');
    const producer = await connect('producer', b.hostSpec);
    let peak = 0;
    const watch = setInterval(() => (peak = Math.max(peak, segmentBytes(dir))), 1);
    let n = 0;
    try {
      for (const inFlight of [500, 1_000]) {
        await Promise.all(Array.from({ length: inFlight }, () => producer.send('ev/v1/a', { n: n++, pad: 'x'.repeat(300) })));
        const onDisk = segmentBytes(dir);
        const metric = valueOf(await scrape(b.managementPort), 'whisker_history_bytes', { queue: 'ev/v1' });
        console.log(`maxBytes ${maxBytes}, ${inFlight} sends in flight: ${onDisk} B on disk, whisker_history_bytes ${metric}`);
        expect(onDisk).toBeLessThanOrEqual(maxBytes);
        expect(metric).toBeLessThanOrEqual(maxBytes);
        expect(metric).toBe(onDisk);
        // trimming whole files keeps most of the budget: more than half of it stays
        expect(onDisk).toBeGreaterThan(maxBytes / 2);
      }
    } finally {
      clearInterval(watch);
    }
    console.log(`peak on disk while sending: ${peak} B`);
    expect(peak).toBeLessThanOrEqual(maxBytes);
    // what is kept is the newest, in order
    const reader = await connect('reader', b.hostSpec);
    const got: number[] = [];
    await reader.replay('ev/v1/*', {}, (_err, msg) => void got.push((msg as { n: number }).n)).done;
    expect(got.length).toBeGreaterThan(0);
    expect(got).toEqual(Array.from({ length: got.length }, (_, k) => n - got.length + k));
    await Promise.all([producer.disconnect(), reader.disconnect()]);
  }, 30_000);

  test('seconds: the periodic trim removes an expired history without a new send; the metrics follow', async () => {
    let clock = Date.now();
    const b = await broker({ defaultPolicy: 'allow', management: { port: 0 }, channels: { 'ev/v1': { retention: { seconds: 2 } } } }, { now: () => clock });
    const dir = join(b.config.dataDirectory, 'history', 'ev@v1');
    const producer = await connect('producer', b.hostSpec);
    await Promise.all(Array.from({ length: 200 }, (_, n) => producer.send('ev/v1/a', { n, pad: 'x'.repeat(50) })));
    expect(segmentBytes(dir)).toBeGreaterThan(0);
    expect(valueOf(await scrape(b.managementPort), 'whisker_history_messages', { queue: 'ev/v1' })).toBe(200);
    clock += 10_000; // expired; no send follows
    await until(() => segmentBytes(dir) === 0, 8_000, 'the periodic trim (every 5 s) removed the expired files');
    expect(readdirSync(dir).filter((f) => f.endsWith('.seg'))).toEqual([]);
    const metrics = await scrape(b.managementPort);
    const messages = samplesOf(metrics, 'whisker_history_messages').find((s) => s.labels.queue === 'ev/v1')?.value ?? 0;
    const bytes = samplesOf(metrics, 'whisker_history_bytes').find((s) => s.labels.queue === 'ev/v1')?.value ?? 0;
    const oldest = samplesOf(metrics, 'whisker_history_oldest_seconds').find((s) => s.labels.queue === 'ev/v1')?.value ?? 0;
    console.log(`after expiry and the periodic trim: messages ${messages}, bytes ${bytes}, oldest_seconds ${oldest}`);
    expect([messages, bytes, oldest]).toEqual([0, 0, 0]);
    // the channel still takes new messages
    await producer.send('ev/v1/a', { n: 200 });
    expect(segmentBytes(dir)).toBeGreaterThan(0);
    await producer.disconnect();
  }, 30_000);
});
