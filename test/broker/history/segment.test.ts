import { describe, expect, test } from 'vitest';
import { decodeRecords, encodeRecords, type HistoryRecord } from '../../../src/broker/history/segment.js';

/** A replay splices a record's data as stored (issue 19): the text it reads back is the data's JSON. */
describe('history records', () => {
  test('the data read back is the JSON of what was stored, whatever it holds', () => {
    const datas: unknown[] = [
      { n: 1, text: 'a "quoted" ,"d": inside', nested: { d: [1, 2, { d: null }] } },
      'just a string with ,"d": and } at the end }',
      42,
      [true, false, null],
      { unicode: 'é 漢字 🐈', escapes: '\\n\u0001' },
    ];
    const records: HistoryRecord[] = datas.map((data, n) => ({ messageId: `m,"d":${n}`, id: `i"${n}`, acceptedAt: 1000 + n, created: 900 + n, from: 'client "x"', data }));
    const { records: read, end, damaged } = decodeRecords(encodeRecords(records));
    expect(damaged).toBe(false);
    expect(end).toBe(encodeRecords(records).length);
    expect(read.map((r) => JSON.parse(r.dataJson) as unknown)).toEqual(datas);
    expect(read.map((r) => [r.messageId, r.id, r.acceptedAt, r.created, r.from])).toEqual(records.map((r) => [r.messageId, r.id, r.acceptedAt, r.created, r.from]));
  });
});
