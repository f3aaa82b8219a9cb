import { describe, expect, test } from 'vitest';
import { History } from '../../../src/broker/history/history.js';
import type { StoredMessage } from '../../../src/broker/store/store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { tempDir } from '../../support/harness.js';
import { historyMessages, replayIds, streamCatchUp } from '../../support/history-catch-up.js';

/**
 * A master catching up holds its clients' copies out of its queues (messages/catch-up-hold.ts)
 * and their history records in its History. Fenced, it writes those records where they arrived;
 * elected again while still catching up, it queues the messages, and its feed names them, only
 * when its peers' offers are in. A follower whose sync began in between got those records twice:
 * in the catch-up (the master's history had them) and from the feed of the sync (the messages
 * were queued after it asked). Outside check atk27k F3 (i2-w30-4): the promoted slave c held a
 * block of 4,896 records twice in a row, its catch-up's last ones and its feed's first ones.
 */
const QUEUE = 'fb/v1';
const retention = () => ({ seconds: 3_600 });
const feedOf = (list: readonly StoredMessage[]) => list.map(({ messageId, queue, id, data, created, acceptedAt, from }) => ({ messageId, queue, id, data, created, acceptedAt, from }));

describe('a sync\'s feed naming what its catch-up brought (real history files)', () => {
  test('records a fenced master wrote, whose messages it queued after the follower asked, are written once, where the master has them', async () => {
    const log = createLogger('silent');
    const master = new History(tempDir('whisker-fb-master-'), retention, log, Date.now);
    const slave = new History(tempDir('whisker-fb-slave-'), retention, log, Date.now);
    await Promise.all([master.open(), slave.open()]);
    await master.inStep();
    await slave.inStep(true);
    const t0 = Date.now() - 20_000;
    const before = historyMessages(QUEUE, 'p', 20, t0);
    await Promise.all([master.append(before), slave.append(before)]);

    // the slave falls out of step (its sync ended with its master fenced)
    await slave.outOfStep();
    // the master, elected while catching up, holds the clients' copies of a block...
    await master.inStep(true);
    const block = historyMessages(QUEUE, 'b', 40, t0 + 1_000);
    void master.append(block, true);
    // ...and is fenced: they are written where they arrived
    await master.outOfStep();
    await master.inStep();

    // the slave asks to follow: the catch-up's view is taken now, with the block
    await streamCatchUp(master, slave);
    // the master's catch-up hold ends: the block's messages are queued and its feed names them,
    // then newer sends: the sync's backlog, which the follower writes after the catch-up
    const newer = historyMessages(QUEUE, 'n', 10, t0 + 2_000);
    await master.append(newer);
    await slave.catchUpFeed(feedOf([...block, ...newer]));
    await slave.inStep(true);

    const want = [...before, ...block, ...newer].map((m) => m.messageId);
    expect(await replayIds(master, QUEUE)).toEqual(want);
    // the slave, elected, replays what its master would: each record once
    await slave.inStep();
    expect(await replayIds(slave, QUEUE)).toEqual(want);
    await Promise.all([master.close(), slave.close()]);
  });

  test('a channel the master had no record of at the view: what the feed named stays where the slave wrote it, not held again for the feed', async () => {
    const log = createLogger('silent');
    const master = new History(tempDir('whisker-fb-master-'), retention, log, Date.now);
    const slave = new History(tempDir('whisker-fb-slave-'), retention, log, Date.now);
    await Promise.all([master.open(), slave.open()]);
    await slave.outOfStep();
    // the master, elected while catching up, holds the first clients' copies of the channel; the slave writes its own
    await master.inStep(true);
    const held = historyMessages(QUEUE, 'h', 30, Date.now() - 5_000);
    void master.append(held, true);
    await slave.append(held, true);
    // the slave's catch-up: the master has no record of the channel yet, none is sent
    await streamCatchUp(master, slave);
    // the master's hold ends during the sync: its feed names them (sent before `done`)
    await master.inStep();
    await slave.catchUpFeed(feedOf(held));
    await slave.inStep(true);
    // in step, the next sends: the slave's copies placed by the feed
    const newer = historyMessages(QUEUE, 'n', 10, Date.now());
    await Promise.all([master.append(newer), slave.append(newer, true)]);
    await slave.place(feedOf(newer), () => false);

    const want = [...held, ...newer].map((m) => m.messageId);
    expect(await replayIds(master, QUEUE)).toEqual(want);
    // elected: what it held for the feed is written now; the feed named `held` already
    await slave.inStep();
    expect(await replayIds(slave, QUEUE)).toEqual(want);
    await Promise.all([master.close(), slave.close()]);
  });
});
