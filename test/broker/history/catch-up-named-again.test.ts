import { describe, expect, test } from 'vitest';
import { History } from '../../../src/broker/history/history.js';
import type { StoredMessage } from '../../../src/broker/store/store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { tempDir } from '../../support/harness.js';
import { historyMessages, replayIds as replayOf, streamCatchUp } from '../../support/history-catch-up.js';

/**
 * A follower's history catch-up brings records whose messages its master's feed names only later
 * (issue 27, outside check atk27g G4). A master elected while catching up holds its clients'
 * copies out of its queues until its peers' offers end; fenced and elected again meanwhile, its
 * history wrote those copies where they arrived while its router still held the messages. A
 * follower syncing then got their records in its catch-up, and again when the master's hold
 * ended and its feed named the messages (stored afresh here: this broker's log never had them).
 * Traced in `BURST=2 GAP=2 P=4 node test/attacks-27g/g2-retained-kill.mjs` (run t8, load 17):
 * the restarted old master a wrote 416 records in its catch-up at 13:09:38.976 and the same 416
 * from the feed's `place` at 13:09:40.501 (its master c's hold: "clients' messages held while
 * catching up are queued {messages: 3086}" at 13:09:39.576); its replay had 416 twice.
 */
const QUEUE = 'na/v1';
const retention = () => ({ seconds: 3_600 });

const messages = (prefix: string, count: number, at: number) => historyMessages(QUEUE, prefix, count, at);

const asPeer = (list: readonly StoredMessage[]) => list.map(({ messageId, queue, id, data, created, acceptedAt, from }) => ({ messageId, queue, id, data, created, acceptedAt, from }));

const replayIds = (history: History) => replayOf(history, QUEUE);

/** the master's catch-up for the follower, written as replica.applyHistory writes it */
const catchUp = (master: History, follower: History) => streamCatchUp(master, follower);

describe('a catch-up\'s records named again by the master\'s feed (real history files)', () => {
  for (const how of ['the feed stores them here', 'a client\'s copy held, then named'] as const) {
    test(`written once, where the catch-up put them: ${how}`, async () => {
      const log = createLogger('silent');
      const master = new History(tempDir('whisker-na-master-'), retention, log, Date.now);
      const follower = new History(tempDir('whisker-na-follower-'), retention, log, Date.now);
      await Promise.all([master.open(), follower.open()]);
      await master.inStep();
      await follower.inStep(true);
      const t0 = Date.now() - 20_000;
      const before = messages('b', 20, t0);
      await Promise.all([master.append(before), follower.append(before)]);
      // the follower falls out of step (killed and restarted, or its master fenced)
      await follower.outOfStep();
      // the master's history takes clients' copies its router still holds (its feed has not named them)
      const held = messages('h', 30, t0 + 1_000);
      await master.append(held, true);
      await catchUp(master, follower);
      await follower.inStep(true);
      if (how === 'a client\'s copy held, then named') await follower.append(held, true);
      // the master's hold ends: its feed names them; this broker's log never had them (fresh)
      await follower.place(asPeer(held), () => true);

      const want = [...before, ...held].map((m) => m.messageId);
      expect(await replayIds(master)).toEqual(want);
      expect(await replayIds(follower)).toEqual(want);
      await Promise.all([master.close(), follower.close()]);
    });
  }

  test('a later catch-up that replaces the whole history (a master lacking them) lets the feed write them again', async () => {
    const log = createLogger('silent');
    const first = new History(tempDir('whisker-na-first-'), retention, log, Date.now);
    const second = new History(tempDir('whisker-na-second-'), retention, log, Date.now);
    const follower = new History(tempDir('whisker-na-follower-'), retention, log, Date.now);
    await Promise.all([first.open(), second.open(), follower.open()]);
    await Promise.all([first.inStep(), second.inStep()]);
    const t0 = Date.now() - 20_000;
    const held = messages('h', 10, t0 + 1_000);
    await first.append(held, true);
    await follower.outOfStep();
    await catchUp(first, follower);
    await follower.inStep(true);
    // another master, which has none of what the follower had: its whole history replaces it
    const other = messages('o', 5, t0 + 2_000);
    await second.append(other);
    await follower.outOfStep();
    await catchUp(second, follower);
    await follower.inStep(true);
    // that master's feed names them later: they are written then
    await follower.place(asPeer(held), () => true);
    expect(await replayIds(follower)).toEqual([...other, ...held].map((m) => m.messageId));
    await Promise.all([first.close(), second.close(), follower.close()]);
  });
});
