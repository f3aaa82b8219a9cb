import { describe, expect, test } from 'vitest';
import type { HistoryFrame } from '../../../src/protocol/frames.js';
import { History } from '../../../src/broker/history/history.js';
import { HistoryStream } from '../../../src/broker/mirror/history-stream.js';
import { makeStoredMessage, type StoredMessage } from '../../../src/broker/store/store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { tempDir } from '../../support/harness.js';

/**
 * A mirror's history catch-up while its master takes a hand-over (a move, or a call-off's
 * hand-back: SPEC §13, issue 31). The master writes the hand-over's history first, then stores
 * the messages and its feed names them: a follower asking for its catch-up in between got those
 * records twice, in the catch-up (the master's history had them) and from the feed of the sync
 * (the messages were stored after it asked). Outside check atk31f: the restarted slave of set a,
 * elected after a call-off, replayed b's hand-back twice (293 and 320 records, 2 runs of 9).
 */
const QUEUE = 'ho/v1';
const retention = () => ({ seconds: 3_600 });

function messages(prefix: string, count: number, at: number): StoredMessage[] {
  return Array.from({ length: count }, (_, n) => makeStoredMessage(n + 1, { messageId: `${prefix}${n}`, queue: QUEUE, id: 'k', data: { n: `${prefix}${n}` }, created: at + n, acceptedAt: at + n, from: 'producer' }));
}

const records = (list: readonly StoredMessage[]) => list.map(({ messageId, id, acceptedAt, created, from, data }) => ({ messageId, id, acceptedAt, created, from, data }));

async function replayIds(history: History): Promise<string[]> {
  const ids: string[] = [];
  await history.read(QUEUE, {}, (record) => {
    ids.push(record.messageId);
    return true;
  });
  return ids;
}

describe('history catch-up during a hand-over (real history files)', () => {
  test('a follower that asks for its catch-up while its master stores a hand-back gets each record once, in the master\'s order', async () => {
    const log = createLogger('silent');
    const master = new History(tempDir('whisker-ho-master-'), retention, log, Date.now);
    const slave = new History(tempDir('whisker-ho-slave-'), retention, log, Date.now);
    await Promise.all([master.open(), slave.open()]);
    await master.inStep();
    await slave.inStep(true);
    const t0 = Date.now() - 60_000;
    // what both held before the call-off (the slave in step)
    const before = messages('p', 20, t0);
    await Promise.all([master.append(before), slave.append(before)]);
    // set a's brokers restarted: the slave is out of step, and takes the hand-back on its own first
    await slave.outOfStep();
    const handBack = messages('h', 30, t0 + 1_000);
    const ids = new Set(handBack.map((m) => m.messageId));
    expect(await slave.adopt(QUEUE, records(handBack), ids)).toBe(30);
    await slave.append(handBack);
    // the master takes it: its history first (the move's adopt)...
    expect(await master.adopt(QUEUE, records(handBack), ids)).toBe(30);

    // ...and the slave asks to follow before the master has stored the messages: the catch-up's view is taken now
    const anchors = await slave.anchors(16);
    const plan = HistoryStream.plan(master.views(), new Set(), anchors);
    // the master stores them (their history is written already) and its feed names them: the
    // sync's backlog, which the follower gets after the catch-up
    await master.append(handBack);
    const feed = handBack.map(({ messageId, queue, id, data, created, acceptedAt, from }) => ({ messageId, queue, id, data, created, acceptedAt, from }));
    master.stored(ids);

    // the catch-up, as the follower writes it (replica.applyHistory), then the backlog (historyFromFeed)
    const frames: HistoryFrame[] = [];
    const stream: HistoryStream = new HistoryStream({
      sendText: (text) => {
        const frame = JSON.parse(text) as HistoryFrame;
        frames.push(frame);
        queueMicrotask(() => stream.acked(frame.n));
      },
      whenWritable: () => Promise.resolve(),
    });
    expect(await stream.run(plan)).toBe(true);
    for (const frame of frames) {
      if (frame.after !== undefined) await slave.catchUpBegin(frame.queue, frame.after);
      if (frame.records.length > 0) await slave.catchUpWrite(frame.queue, frame.records);
      if (frame.last) await slave.catchUpEnd(frame.queue);
    }
    await slave.catchUpFeed(feed);
    await slave.inStep(true);

    const want = [...before, ...handBack].map((m) => m.messageId);
    expect(await replayIds(master)).toEqual(want);
    // the slave, elected, replays what its master would: each record once
    await slave.inStep();
    expect(await replayIds(slave)).toEqual(want);
    await Promise.all([master.close(), slave.close()]);
  });
});
