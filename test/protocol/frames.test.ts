import { describe, expect, test } from 'vitest';
import { type Delivery, encodeDelivery } from '../../src/protocol/frames.js';

/** a delivery built around a body serialised once is the same text as the whole delivery serialised */
describe('encodeDelivery', () => {
  const base: Delivery = { sub: 3, messageId: 'm-1', channel: 'orders/v1/42', data: null, created: 1_764_800_000_123, nbRequeues: 0, from: 'shop', via: '*' };
  const cases: Array<[string, Partial<Delivery>]> = [
    ['a plain object', { data: { seq: 1, t: 1.5, pad: 'xxx' } }],
    ['null, a string, an array', { data: [null, 'a', 2] }],
    ['quotes, backslashes, control characters and unicode in every string', { messageId: 'm"\\\n\u0001é', channel: 'a/v1/"x"', from: 'ün\u2028', via: 'x\\y', data: { 'k"': 'v\u0000' } }],
    ['a redelivery with a large sub', { sub: 2 ** 31, nbRequeues: 7, data: { nested: { deep: [1, { x: true }] } } }],
  ];
  test.each(cases)('%s', (_name, overrides) => {
    const delivery = { ...base, ...overrides };
    expect(encodeDelivery(delivery, JSON.stringify(delivery.data))).toBe(JSON.stringify(delivery));
  });
});
