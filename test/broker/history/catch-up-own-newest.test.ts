import { describe, expect, test } from 'vitest';
import { FOLLOW_ANCHORS } from '../../../src/protocol/frames.js';
import { History } from '../../../src/broker/history/history.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { tempDir } from '../../support/harness.js';
import { historyMessages, replayIds as replayOf, streamCatchUp } from '../../support/history-catch-up.js';

/**
 * The ids a follower names in its `follow` (issue 27, outside check atk27g G3). Its newest
 * records may be its own writes that its master placed later than records it lacks: a restarted
 * old master's clients' copies, written where they arrived after an earlier catch-up, which the
 * new master wrote after the copies it held while catching up. Named alone, they made the master
 * start its catch-up after the records the follower lacked, which then came neither in the
 * catch-up nor from the feed (the master's promotion queued them unnamed). Traced in
 * `BURST=2 GAP=2 P=4 node test/attacks-27g/g2-retained-kill.mjs` (run t10, load 16): the
 * restarted old master a named 3:1449 and its 15 neighbours; its master c had written 1:1512
 * and 15 more 41 records before 3:1449 (its promotion, 13:11:47.418); a lacked those 16
 * answered-OK sends until it wrote its own copies, 30 s later, at the end.
 */
const QUEUE = 'an/v1';
const retention = () => ({ seconds: 3_600 });

const messages = (prefix: string, count: number, at: number) => historyMessages(QUEUE, prefix, count, at);
const replayIds = (history: History) => replayOf(history, QUEUE);

describe('the ids a follower names for its history catch-up (real history files)', () => {
  test('its newest records placed late by its master do not hide the records it lacks before them', async () => {
    const log = createLogger('silent');
    const master = new History(tempDir('whisker-an-master-'), retention, log, Date.now);
    const follower = new History(tempDir('whisker-an-follower-'), retention, log, Date.now);
    await Promise.all([master.open(), follower.open()]);
    await master.inStep();
    await follower.inStep();
    const t0 = Date.now() - 60_000;
    // what both have, in the same order
    const common = messages('p', 200, t0);
    // the follower's own writes after that (more than it names), which its master placed after
    // records the follower never had, and newer ones
    const own = messages('u', 40, t0 + 1_000);
    const lacked = messages('x', 16, t0 + 2_000);
    const newer = messages('y', 5, t0 + 3_000);
    await master.append([...common, ...lacked, ...own, ...newer]);
    await follower.append([...common, ...own]);
    await follower.outOfStep();

    const anchors = await follower.anchors(FOLLOW_ANCHORS);
    expect(anchors[0]!.after.length).toBeLessThanOrEqual(FOLLOW_ANCHORS);
    await streamCatchUp(master, follower, { anchors });
    await follower.inStep();

    const theMaster = await replayIds(master);
    const theFollower = await replayIds(follower);
    // every record its master has, once (the order of its own writes and those it lacked may differ)
    expect(new Set(theFollower).size).toBe(theFollower.length);
    expect([...theFollower].sort()).toEqual([...theMaster].sort());
    // what both had stays first, in the same order
    expect(theFollower.slice(0, common.length)).toEqual(theMaster.slice(0, common.length));
    await Promise.all([master.close(), follower.close()]);
  });
});
