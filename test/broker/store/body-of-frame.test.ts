import { describe, expect, test } from 'vitest';
import { bodyOfFrame, bodyTextOfFrame, FrameWriter, NO_BODY } from '../../../src/broker/store/log-binary.js';
import { decodeRecord } from '../../../src/broker/store/log-format.js';
import type { StoredMessage } from '../../../src/broker/store/store.js';

/** A body read back from the log (log-reader.ts) takes the data out of a message frame without decoding the rest: it must agree with decodeRecord. */
const message = (messageId: string, data: unknown, queue = 'q/v1', id = '7', from = 'producer'): StoredMessage => ({ seq: 12, messageId, queue, id, data, created: 1, acceptedAt: 2, from });

function frameOf(m: StoredMessage): Buffer {
  const writer = new FrameWriter();
  writer.reset();
  writer.message(m, m.data === undefined ? undefined : JSON.stringify(m.data));
  return Buffer.from(writer.bytes());
}

describe('bodyOfFrame', () => {
  test('gives what decodeRecord gives as the data, for ids, names and bodies of every shape', () => {
    const cases = [
      message('0123456789abcdef0123456789abcdef', { seq: 1, pad: 'xxxx' }),
      message('caf\u00e9-\u2603', { text: '\u00e9\u2603', n: [1, 2, 3] }, 'q\u00e9/v1', '\u2603', 'pr\u00e9'),
      message('m-1', undefined),
      message('m-2', null),
      message('m-3', 'a string'),
      message('', { empty: true }, '', '', ''),
    ];
    for (const m of cases) {
      const frame = frameOf(m);
      const decoded = decodeRecord(frame, 0, frame.length);
      expect(decoded.ok && decoded.records[0]!.k === 'm' ? decoded.records[0]!.m.data : 'not decoded').toEqual(m.data);
      expect(bodyOfFrame(frame, m.messageId)).toEqual(m.data);
      // as text: what JSON.stringify made of it at intake, byte for byte (a delivery splices it in)
      expect(bodyTextOfFrame(frame, m.messageId)).toBe(m.data === undefined ? undefined : JSON.stringify(m.data));
    }
  });

  test('another message, a run of state changes, a torn or corrupt frame: NO_BODY', () => {
    const frame = frameOf(message('m-10', { n: 10 }));
    expect(bodyOfFrame(frame, 'm-1')).toBe(NO_BODY);
    expect(bodyOfFrame(frame, 'm-100')).toBe(NO_BODY);
    expect(bodyOfFrame(frame.subarray(0, frame.length - 1), 'm-10')).toBe(NO_BODY);
    const corrupt = Buffer.from(frame);
    corrupt[corrupt.length - 2] = corrupt[corrupt.length - 2]! ^ 0xff;
    expect(bodyOfFrame(corrupt, 'm-10')).toBe(NO_BODY);
    expect(bodyTextOfFrame(corrupt, 'm-10')).toBe(NO_BODY);
    expect(bodyTextOfFrame(frame, 'm-1')).toBe(NO_BODY);
    const writer = new FrameWriter();
    writer.reset();
    writer.event({ k: 'x', id: 'm-10' });
    expect(bodyOfFrame(Buffer.from(writer.bytes()), 'm-10')).toBe(NO_BODY);
  });
});
