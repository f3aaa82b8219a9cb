import { describe, expect, test } from 'vitest';
import { encodePeerMessage } from '../../../src/broker/mirror/feed.js';
import { toPeerMessage } from '../../../src/broker/mirror/replica.js';
import type { StoredMessage } from '../../../src/broker/store/store.js';

/** a feed's message with the body spliced in as stored is the text of the message serialised whole */
describe('encodePeerMessage', () => {
  const base: StoredMessage = { seq: 7, messageId: 'm-1', queue: 'orders/v1', id: '42', data: { n: 1 }, created: 1_764_800_000_123, acceptedAt: 1_764_800_000_456, from: 'shop' };
  const cases: Array<[string, Partial<StoredMessage>]> = [
    ['a plain object', { data: { seq: 1, t: 1.5, pad: 'xxx' } }],
    ['quotes, backslashes, control characters and unicode in every string', { messageId: 'm"\\\n\u0001é', queue: 'a/v"1', id: 'x\\y\u2028', from: 'ün', data: { 'k"': 'v\u0000' } }],
    ['an array body', { data: [null, 'a', 2] }],
  ];
  test.each(cases)('%s', (_name, overrides) => {
    const m = { ...base, ...overrides };
    expect(encodePeerMessage({ ...m, json: JSON.stringify(m.data) })).toBe(JSON.stringify(toPeerMessage(m)));
    expect(encodePeerMessage(m)).toBe(JSON.stringify(toPeerMessage(m)));
  });
});
