import { describe, expect, test } from 'vitest';
import { broker, connect } from '../support/harness.js';
import { parseMetrics, samplesOf, valueOf } from '../support/prom.js';
import { newKeyPair, RawPeer } from '../support/raw-peer.js';

/** Retained histories and replays in /metrics (issue 19, docs/management.md#metrics), on a real broker. */
const scrape = async (port: number | null) => parseMetrics(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());

describe('history and replay metrics', () => {
  test('retained bytes, messages and age per channel (bounded by maxQueueSeries); replays served, in progress, and the messages they gave', async () => {
    let clock = 1_700_000_000_000;
    const retention = { retention: { seconds: 3600 } };
    const b = await broker(
      { defaultPolicy: 'allow', management: { port: 0, maxQueueSeries: 1 }, channels: { 'ev/v1': retention, 'zz/v1': retention }, limits: { maxBufferedBytesPerConnection: 65_536 } },
      { now: () => clock },
    );
    const before = await scrape(b.managementPort);
    expect(valueOf(before, 'whisker_replays_total')).toBe(0);
    expect(valueOf(before, 'whisker_replays_in_progress')).toBe(0);
    expect(valueOf(before, 'whisker_replayed_messages_total')).toBe(0);
    expect(samplesOf(before, 'whisker_history_messages')).toEqual([]);
    expect(before.get('whisker_history_bytes')?.type).toBe('gauge');

    const producer = await connect('producer', b.hostSpec);
    // 8 MB to replay: more than a paused reader's socket buffers can take (loopback grows them to a few MB)
    const pad = 'x'.repeat(8_000);
    const total = 1_000;
    for (let n = 0; n < total; n += 100) await Promise.all(Array.from({ length: 100 }, (_, k) => producer.send('ev/v1/a', { n: n + k, pad })));
    await producer.send('zz/v1/a', { n: 0 });
    await producer.send('zz/v1/b', { n: 1 });
    clock += 10_000;

    const kept = await scrape(b.managementPort);
    expect(samplesOf(kept, 'whisker_history_messages').map((s) => [s.labels.queue, s.value])).toEqual([['ev/v1', total], ['_other', 2]]);
    expect(valueOf(kept, 'whisker_history_bytes', { queue: 'ev/v1' })).toBeGreaterThan(total * 8_000);
    expect(valueOf(kept, 'whisker_history_bytes', { queue: '_other' })).toBeGreaterThan(0);
    expect(valueOf(kept, 'whisker_history_oldest_seconds', { queue: 'ev/v1' })).toBe(10);

    // a reader that stops reading: the replay waits for its socket, in progress
    const reader = await RawPeer.open(b.port);
    await reader.login('reader', newKeyPair());
    reader.keepFrames = false;
    let replayed = 0;
    reader.onFrame = (frame) => void (frame.type === 'deliver' && (replayed += frame.messages.length));
    reader.pause();
    reader.sendJson({ type: 'replay', req: 1, sub: 1, endpoint: 'ev', version: 'v1', ids: ['*'] });
    let during = kept;
    for (const start = Date.now(); valueOf(during, 'whisker_replays_in_progress') !== 1; await new Promise((r) => setTimeout(r, 20))) {
      if (Date.now() - start > 15_000) throw new Error('no replay in progress within 15 s');
      during = await scrape(b.managementPort);
    }
    expect(valueOf(during, 'whisker_replays_total')).toBe(1);
    expect(valueOf(during, 'whisker_replayed_messages_total')).toBeLessThan(total);

    const ended = reader.next('replayEnd', undefined, 10_000);
    reader.resume();
    expect((await ended).count).toBe(total);
    expect(replayed).toBe(total);
    // the replay's end is counted once the broker is done with it, which may come a moment after
    // the client read replayEnd (seen under load: 1 in the first scrape after it)
    await expect.poll(async () => valueOf(await scrape(b.managementPort), 'whisker_replays_in_progress'), { timeout: 5_000, interval: 20 }).toBe(0);
    const after = await scrape(b.managementPort);
    expect(valueOf(after, 'whisker_replays_total')).toBe(1);
    expect(valueOf(after, 'whisker_replayed_messages_total')).toBe(total);
    await producer.disconnect();
  });
});
