import { describe, expect, test } from 'vitest';
import type { Delivery } from '../../../src/protocol/frames.js';
import { DeliverFrames } from '../../../src/broker/session/deliver-frames.js';

const base: Delivery = { sub: 3, messageId: 'm-1', channel: 'orders/v1/42', data: null, created: 1_764_800_000_123, nbRequeues: 0, from: 'shop', via: '*' };
const frameOf = (deliveries: Delivery[]) => JSON.stringify({ type: 'deliver', messages: deliveries });

/** deliveries encoded into their frame's bytes are the text of the frame serialised whole */
describe('DeliverFrames', () => {
  const cases: Array<[string, Partial<Delivery>]> = [
    ['a plain object', { data: { seq: 1, t: 1.5, pad: 'xxx' } }],
    ['null, a string, an array', { data: [null, 'a', 2] }],
    ['quotes, backslashes, control characters and unicode in every string', { messageId: 'm"\\\n\u0001é', channel: 'a/v1/"x"', from: 'ün\u2028', via: 'x\\y', data: { 'k"': 'v\u0000', s: '\ud83d\ude00 and a lone \ud800' } }],
    ['a DEL character and strings past the byte-by-byte length', { messageId: 'x\u007f', channel: `a/v1/${'c'.repeat(300)}`, from: 'é'.repeat(300), data: 'd'.repeat(1000) }],
    ['a redelivery with a large sub', { sub: 2 ** 31, nbRequeues: 7, data: { nested: { deep: [1, { x: true }] } } }],
  ];
  test.each(cases)('%s', (_name, overrides) => {
    const delivery = { ...base, ...overrides };
    const frames = new DeliverFrames();
    frames.add(delivery, JSON.stringify(delivery.data), 1 << 20, 1000);
    frames.add({ ...delivery, sub: 4 }, undefined, 1 << 20, 1000);
    const out = frames.take();
    expect(out.map((b) => b.toString('utf8'))).toEqual([frameOf([delivery, { ...delivery, sub: 4 }])]);
    expect(frames.isEmpty).toBe(true);
  });

  test('a frame holds at most maxItems deliveries, and stops before the one that would pass maxBytes', () => {
    const frames = new DeliverFrames();
    const all = Array.from({ length: 25 }, (_, i) => ({ ...base, messageId: `m-${i}`, data: { pad: 'p'.repeat(i * 10) } }));
    for (const d of all) frames.add(d, JSON.stringify(d.data), 1200, 4);
    const texts = frames.take().map((b) => b.toString('utf8'));
    const parsed = texts.map((t) => JSON.parse(t) as { type: string; messages: Delivery[] });
    expect(parsed.flatMap((f) => f.messages)).toEqual(all);
    for (const [i, f] of parsed.entries()) {
      expect(f.type).toBe('deliver');
      expect(f.messages.length).toBeGreaterThan(0);
      expect(f.messages.length).toBeLessThanOrEqual(4);
      // past 1200 bytes only when a single delivery is that large on its own
      if (f.messages.length > 1) expect(Buffer.byteLength(texts[i]!)).toBeLessThanOrEqual(1200 + 40);
    }
    expect(texts.some((t, i) => parsed[i]!.messages.length < 4 && i < texts.length - 1)).toBe(true);
  });

  test('frames taken are not overwritten by the deliveries queued after them (the socket may still hold them)', () => {
    const frames = new DeliverFrames();
    for (const size of [10, 20_000]) {
      const first = { ...base, messageId: 'first', data: 'a'.repeat(size) };
      frames.add(first, JSON.stringify(first.data), 1 << 20, 1000);
      const taken = frames.take();
      const second = { ...base, messageId: 'second', data: 'b'.repeat(size) };
      frames.add(second, JSON.stringify(second.data), 1 << 20, 1000);
      expect(taken.map((b) => b.toString('utf8'))).toEqual([frameOf([first])]);
      expect(frames.take().map((b) => b.toString('utf8'))).toEqual([frameOf([second])]);
    }
  });
});
