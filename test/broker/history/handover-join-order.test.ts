import { describe, expect, test } from 'vitest';
import { History } from '../../../src/broker/history/history.js';
import type { StoredMessage } from '../../../src/broker/store/store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { tempDir } from '../../support/harness.js';
import { historyMessages, replayIds as replayOf } from '../../support/history-catch-up.js';

/**
 * A broker of the new set that takes a move's hand-over while it is out of step (SPEC §13, issue
 * 31): restarted during the move, it syncs with its set's master and takes the hand-over on its
 * own before the master does. `adopt` writes the old set's history to its side line, before what
 * it held back for the move; its master, which has not taken the hand-over yet, has none of it
 * to send in the catch-up. At the join (in step, placing) the recent own records the catch-up
 * did not bring were all taken for clients' copies and held again for the master's feed, the old
 * set's history too; the feed never names those records (the master writes them from its own
 * hand-over), so they were written last, after sends made during and after the move. Outside
 * re-check atk31j (test/attacks-31j/README.md): `REPLAY=1 KILL_DELAY_MS=1000
 * test/attacks-31g/run.sh 31c:move-b-down` at load 10-11, set b's final master replayed the
 * 5,338 handed-over records after sends made during the move (history traced with B_STOPS: the
 * join held again 11,542 records beginning with the hand-over's `seq 0`).
 */
const QUEUE = 'hj/v1';
const retention = () => ({ seconds: 3_600 });

const messages = (prefix: string, count: number, at: number) => historyMessages(QUEUE, prefix, count, at);

const records = (list: readonly StoredMessage[]) => list.map(({ messageId, id, acceptedAt, created, from, data }) => ({ messageId, id, acceptedAt, created, from, data }));

const replayIds = (history: History) => replayOf(history, QUEUE);

describe("a hand-over taken out of step keeps its place at the join (real history files)", () => {
  test("a slave syncing when it takes the hand-over: the old set's history stays before the sends of the move, and before what the feed places after", async () => {
    const history = new History(tempDir('whisker-hj-'), retention, createLogger('silent'), Date.now);
    await history.open();
    // restarted during the move: out of step, the queue waits for the hand-over
    await history.outOfStep();
    history.holdMoving(QUEUE);
    const t0 = Date.now() - 20_000;
    // sent to this set during the move (put aside): their records wait for the hand-over
    const meanwhile = messages('m', 5, t0 + 10_000);
    await history.append(meanwhile);
    // the hand-over, taken here before the master takes it: the old set's history (settled
    // records, and those of the messages handed over), then what waited
    const settled = messages('s', 5, t0);
    const handed = messages('h', 5, t0 + 1_000);
    const handOver = [...settled, ...handed];
    expect(await history.adopt(QUEUE, records(handOver), new Set(handed.map((m) => m.messageId)))).toBe(10);
    history.stored(handed.map((m) => m.messageId));
    history.releaseMoving(QUEUE);
    // the sync is done: the master's catch-up brought nothing of the queue (it has not taken the hand-over yet); in step, placing
    await history.inStep(true);
    // the master's feed names the sends of the move (it stored them as they came), its hand-over's messages (this broker has them), then newer sends
    const newer = messages('n', 5, Date.now() - 1_000);
    await history.place([...meanwhile, ...handed, ...newer], (messageId) => messageId.startsWith('n'));
    // promoted later: whatever it still held is written where it arrived
    await history.outOfStep();
    await history.inStep();
    // before: s0-s4 (never named by the feed) at the end, after n0-n4
    expect(await replayIds(history)).toEqual([...settled, ...handed, ...meanwhile, ...newer].map((m) => m.messageId));
    await history.close();
  });
});
