import { describe, expect, test } from 'vitest';
import { History } from '../../../src/broker/history/history.js';
import { makeStoredMessage, type StoredMessage } from '../../../src/broker/store/store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { tempDir } from '../../support/harness.js';

/**
 * A history whose role changes again while it still joins its side lines (issue 27): a master
 * fenced, its clients' copies written on its side line, elected again while catching up
 * (`inStep(true)`: the side line's recent records are held again, behind what arrives during
 * the join), then its catch-up ends (`inStep()`) or it is fenced again (`outOfStep()`) before
 * that join is done. Before, the copies held at that moment were written first and the side
 * line's older records after them (nemesis seed 27 under load: 1,484 records out of send order
 * in the final master's replay, 8,285 after 10,556).
 */
const QUEUE = 'rf/v1';
const retention = () => ({ seconds: 3_600 });

function messages(prefix: string, count: number, at: number): StoredMessage[] {
  return Array.from({ length: count }, (_, n) => makeStoredMessage(n + 1, { messageId: `${prefix}${n}`, queue: QUEUE, id: 'k', data: { n: `${prefix}${n}`, pad: 'x'.repeat(2_000) }, created: at + n, acceptedAt: at + n, from: 'producer' }));
}

async function replay(history: History): Promise<string[]> {
  const ids: string[] = [];
  await history.read(QUEUE, {}, (record) => {
    ids.push(record.messageId);
    return true;
  });
  return ids;
}

describe('a history whose role flaps during a join of its side lines (real history files)', () => {
  for (const then of ['inStep', 'outOfStep'] as const) {
    test(`elected while catching up, then ${then === 'inStep' ? 'its catch-up ends' : 'fenced again'} before the join is done: in the order stored`, async () => {
      const history = new History(tempDir('whisker-rf-'), retention, createLogger('silent'), Date.now);
      await history.open();
      const t0 = Date.now() - 10_000;
      const before = messages('m', 5, t0);
      await history.append(before);
      await history.outOfStep(); // fenced: its own writes go to its side line
      const side = messages('s', 300, t0 + 1_000);
      await history.append(side, true);
      const joining = history.inStep(true); // elected while catching up: the side line is held again
      const during = messages('d', 5, t0 + 5_000);
      const written = history.append(during, true);
      const ended = then === 'inStep' ? history.inStep() : history.outOfStep();
      await Promise.all([joining, written, ended]);
      if (then === 'outOfStep') await history.inStep();
      expect(await replay(history)).toEqual([...before, ...side, ...during].map((m) => m.messageId));
      await history.close();
    });
  }
});
