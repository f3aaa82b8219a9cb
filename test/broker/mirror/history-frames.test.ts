import { describe, expect, test } from 'vitest';
import { type HistoryFrame, type SyncFrame } from '../../../src/protocol/frames.js';
import { broker, connect, until } from '../../support/harness.js';
import { newKeyPair, RawPeer } from '../../support/raw-peer.js';

/**
 * The history catch-up as a broker of another make sees it on the wire (docs/protocol.md#history-catch-up):
 * `follow` with `history`, `history` frames of at most 1,000 records, never more than 4 unanswered,
 * records after the earliest id the follower named (all of them when the master has none of those).
 */
const N = 5_000;
/** the follower's key pair: its first connection registers it */
const keys = newKeyPair();

const follower = (port: number, serviceId: string): Promise<RawPeer> => RawPeer.follower(port, serviceId, keys);

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('history frames of a sync', () => {
  test('a follower far behind: frames of at most 1,000 records, 4 unanswered at most, every record once in order, then sync done', async () => {
    const master = await broker({ serviceId: 'm', peers: ['127.0.0.1:9@raw'], defaultPolicy: 'allow', maxItemsInQueue: 100_000, channels: { 'ev/v1': { retention: { seconds: 3600 } } } });
    const producer = await connect('frames-producer', master.hostSpec);
    for (let k = 0; k < N; k += 500) await Promise.all(Array.from({ length: 500 }, (_, i) => producer.send('ev/v1/1', { k: k + i })));
    await producer.disconnect();

    const peer = await follower(master.port, 'm');
    peer.sendJson({ type: 'follow', history: [{ queue: 'ev/v1', after: ['not-here-1', 'not-here-2'] }] });
    await peer.next('history');
    const frames = () => peer.frames.filter((f): f is HistoryFrame => f.type === 'history');
    // nothing answered: the master waits after 4 frames (a loaded machine takes a while to send them)
    await until(() => frames().length >= 4, 10_000, '4 history frames');
    await settle(300);
    expect(frames().length).toBe(4);
    expect(peer.frames.some((f) => f.type === 'sync' && f.done)).toBe(false);
    for (let n = 1; !peer.frames.some((f) => f.type === 'sync' && f.done); n++) {
      await peer.next('history', (f) => f.n === n);
      peer.sendJson({ type: 'historyAck', n });
      await settle(5);
      // never more than 4 beyond the last answer
      expect(frames().length).toBeLessThanOrEqual(n + 4);
    }
    const all = frames();
    expect(all.map((f) => f.n)).toEqual(all.map((_, i) => i + 1));
    expect(all[0]!.after).toBeNull();
    expect(all.slice(1).every((f) => f.after === undefined)).toBe(true);
    expect(all.map((f) => f.last)).toEqual(all.map((_, i) => i === all.length - 1));
    expect(Math.max(...all.map((f) => f.records.length))).toBeLessThanOrEqual(1_000);
    const ks = all.flatMap((f) => f.records.map((r) => (r.data as { k: number }).k));
    expect(ks).toEqual(Array.from({ length: N }, (_, k) => k));
    // the sync's done comes after the last history frame
    const done = peer.frames.findIndex((f) => f.type === 'sync' && (f as SyncFrame).done);
    expect(done).toBeGreaterThan(peer.frames.indexOf(all.at(-1)!));

    // a follower that names records it has: it gets what follows the earliest of them the master has
    const ids = all.flatMap((f) => f.records.map((r) => r.messageId));
    await peer.terminate();
    const second = await follower(master.port, 'm');
    second.onFrame = (f) => void (f.type === 'history' && second.sendJson({ type: 'historyAck', n: f.n }));
    second.sendJson({ type: 'follow', history: [{ queue: 'ev/v1', after: [ids[3_999]!, ids[2_999]!, 'unknown'] }] });
    await second.next('sync', (f) => f.done, 10_000);
    const rest = second.frames.filter((f): f is HistoryFrame => f.type === 'history');
    expect(rest[0]!.after).toBe(ids[2_999]);
    expect(rest.flatMap((f) => f.records.map((r) => (r.data as { k: number }).k))).toEqual(Array.from({ length: N - 3_000 }, (_, i) => 3_000 + i));

    // a follower that asks without `history` (an older broker) gets no history frame
    await second.terminate();
    const old = await follower(master.port, 'm');
    old.sendJson({ type: 'follow' });
    await old.next('sync', (f) => f.done, 10_000);
    expect(old.frames.some((f) => f.type === 'history')).toBe(false);
  }, 60_000);
});
