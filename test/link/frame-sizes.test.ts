import '../support/uncaught.js'; // first: an unhandled rejection from connect() fails the test
import { afterEach, describe, expect, test, vi } from 'vitest';
import { WebSocket } from 'ws';
import { broker, connect, Inbox } from '../support/harness.js';

/**
 * A turn's sends leave in publish frames of at most ~64 KiB (src/link/connection.ts,
 * PUBLISH_FRAME_BYTES), and a turn's deliveries to a connection in deliver frames of at most
 * ~64 KiB (src/broker/session/session.ts, DELIVER_FRAME_BYTES): the reader takes a frame as one
 * string, and V8 keeps a string over 128 KiB in its large-object space, where reading 1,000
 * messages of a frame cost 4-10x more per message than in smaller frames
 * (docs/performance.md#the-socket-path). Both were up to 1,000 messages or 90% of (all of, for
 * deliveries) maxPayloadBytes, 1 MiB: ~244 KB for 1,000 messages of ~100 bytes.
 */
describe('frame sizes', () => {
  afterEach(() => vi.restoreAllMocks());

  test('1,000 sends of ~100 bytes in one turn go in frames under 128 KiB, each delivered once', async () => {
    const b = await broker();
    const producer = await connect('frames-producer', b.hostSpec);
    const consumer = await connect('frames-consumer', b.hostSpec);
    const inbox = new Inbox();
    await consumer.listen('frames/v1/1', inbox.listener).ready;
    const sizes: number[] = [];
    const send = WebSocket.prototype.send;
    vi.spyOn(WebSocket.prototype, 'send').mockImplementation(function (this: WebSocket, data: unknown, ...rest: unknown[]) {
      if (typeof data === 'string' && data.startsWith('{"type":"publish"')) sizes.push(Buffer.byteLength(data));
      return (send as (...args: unknown[]) => void).call(this, data, ...rest);
    });
    const pad = 'x'.repeat(60);
    const sent = Array.from({ length: 1000 }, (_, seq) => producer.send('frames/v1/1', { seq, pad }));
    await Promise.all(sent);
    expect(sizes.length).toBeGreaterThan(1);
    for (const size of sizes) expect(size).toBeLessThan(128 * 1024);
    const got = await inbox.waitFor(1000);
    expect(new Set(got.map((r) => (r.msg as { seq: number }).seq)).size).toBe(1000);
  });

  test('1,000 waiting messages taken by a consumer with prefetch 1,000 come in deliver frames under 128 KiB, each once', async () => {
    const b = await broker();
    const producer = await connect('frames-producer-2', b.hostSpec);
    const pad = 'x'.repeat(60);
    await Promise.all(Array.from({ length: 1000 }, (_, seq) => producer.send('waiting/v1/1', { seq, pad })));
    const sizes: number[] = [];
    const emit = WebSocket.prototype.emit;
    vi.spyOn(WebSocket.prototype, 'emit').mockImplementation(function (this: WebSocket, event: string | symbol, ...args: unknown[]) {
      const data = args[0];
      if (event === 'message' && Buffer.isBuffer(data) && data.subarray(0, 20).toString().startsWith('{"type":"deliver"')) sizes.push(data.length);
      return (emit as (...a: unknown[]) => boolean).call(this, event, ...args);
    });
    const consumer = await connect('frames-consumer-2', b.hostSpec);
    const inbox = new Inbox();
    await consumer.consume('waiting/v1/1', { prefetch: 1000 }, inbox.consumer).ready;
    const got = await inbox.waitFor(1000);
    expect(new Set(got.map((r) => (r.msg as { seq: number }).seq)).size).toBe(1000);
    expect(sizes.length).toBeGreaterThan(1);
    for (const size of sizes) expect(size).toBeLessThan(128 * 1024);
  });
});
