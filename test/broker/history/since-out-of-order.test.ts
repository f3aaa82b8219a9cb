import { describe, expect, test } from 'vitest';
import { History } from '../../../src/broker/history/history.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { tempDir } from '../../support/harness.js';
import { historyMessages, replayIds, streamCatchUp } from '../../support/history-catch-up.js';

/**
 * A history's order is its master's, not its records' acceptance times: held copies written when
 * a hold ends, a master's catch-up, its peers' offers come after newer records. A replay with
 * `since` skips a file whose newest record is older than it: each file's newest time must be the
 * newest of its records, not its last one's. Outside check atk27l F2: replays of a mirror promoted
 * in step, asked for the last 30 s, lacked 24,174 sends answered OK that its sync had brought.
 */
const QUEUE = 'so/v1';
const retention = () => ({ seconds: 3_600 });

async function sinceIds(history: History, since: number): Promise<string[]> {
  const ids: string[] = [];
  await history.read(QUEUE, { since }, (record) => {
    ids.push(record.messageId);
    return true;
  });
  return ids;
}

describe('a replay since a time, over records out of time order (real history files)', () => {
  test('records written after newer ones (a hold ending): the newer ones are replayed', async () => {
    const history = new History(tempDir('whisker-so-'), retention, createLogger('silent'), Date.now);
    await history.open();
    await history.inStep();
    const t0 = Date.now() - 60_000;
    const newer = historyMessages(QUEUE, 'n', 20, t0 + 10_000);
    const older = historyMessages(QUEUE, 'o', 5, t0);
    await history.append(newer);
    await history.append(older);
    expect(await replayIds(history, QUEUE)).toEqual([...newer, ...older].map((m) => m.messageId));
    expect(await sinceIds(history, t0 + 5_000)).toEqual(newer.map((m) => m.messageId));
    await history.close();
  });

  test('a catch-up in its master\'s order, its last records older than earlier ones: the newer ones are replayed', async () => {
    const master = new History(tempDir('whisker-so-master-'), retention, createLogger('silent'), Date.now);
    const slave = new History(tempDir('whisker-so-slave-'), retention, createLogger('silent'), Date.now);
    await Promise.all([master.open(), slave.open()]);
    await master.inStep();
    await slave.outOfStep();
    const t0 = Date.now() - 60_000;
    const newer = historyMessages(QUEUE, 'n', 20, t0 + 10_000);
    const older = historyMessages(QUEUE, 'o', 5, t0);
    await master.append(newer);
    await master.append(older);
    await streamCatchUp(master, slave);
    await slave.inStep();
    expect(await sinceIds(slave, t0 + 5_000)).toEqual(newer.map((m) => m.messageId));
    await Promise.all([master.close(), slave.close()]);
  });
});
