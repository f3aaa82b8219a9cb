import { describe, expect, test } from 'vitest';
import type { HistoryFrame } from '../../../src/protocol/frames.js';
import { History } from '../../../src/broker/history/history.js';
import { HistoryStream } from '../../../src/broker/mirror/history-stream.js';
import { makeStoredMessage, type StoredMessage } from '../../../src/broker/store/store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { tempDir } from '../../support/harness.js';

/**
 * Where a mirror's history catch-up starts (docs/protocol.md#history-catch-up). A mirror's
 * newest records need not be the end of a prefix of its master's history: a master killed -9
 * wrote the sends in flight at its kill, and the mirror elected after it placed other records
 * (a peer's offer, its held clients' copies) before those. Anchored on the follower's newest
 * records, the catch-up began after them and never brought what the master placed before them:
 * outside check atk27g G3 (a restarted old master lacking 166 accepted sends its master and
 * the other mirror replay, 20 s later still) and G1 (the elected master's history lacking 136
 * sends answered OK, nemesis seed 27).
 */
const QUEUE = 'an/v1';
const retention = () => ({ seconds: 3_600 });

function messages(prefix: string, count: number, at: number): StoredMessage[] {
  return Array.from({ length: count }, (_, n) => makeStoredMessage(n + 1, { messageId: `${prefix}${n}`, queue: QUEUE, id: 'k', data: { n: `${prefix}${n}` }, created: at + n, acceptedAt: at + n, from: 'producer' }));
}

async function replayIds(history: History): Promise<string[]> {
  const ids: string[] = [];
  await history.read(QUEUE, {}, (record) => {
    ids.push(record.messageId);
    return true;
  });
  return ids;
}

/** the catch-up as a master sends it and a follower writes it (replica.applyHistory), then the join; `cut`: frames applied before its link is lost (no join) */
async function catchUp(master: History, slave: History, cut?: number): Promise<void> {
  const plan = HistoryStream.plan(master.views(), new Set(), await slave.anchors(16));
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
  for (const frame of frames.slice(0, cut)) {
    if (frame.after !== undefined) await slave.catchUpBegin(frame.queue, frame.after, 10_000);
    if (frame.records.length > 0) await slave.catchUpWrite(frame.queue, frame.records);
    if (frame.last) await slave.catchUpEnd(frame.queue);
  }
  if (cut === undefined) await slave.inStep(true);
}

describe('history catch-up anchors (real history files)', () => {
  test.each([
    ['a few records', 20],
    ['more records than the catch-up used to compare', 12_000],
  ])('a mirror whose newest records its master placed after others it lacks gets those, each record once, in the master\'s order (%s)', async (_label, newest) => {
    const log = createLogger('silent');
    const master = new History(tempDir('whisker-an-master-'), retention, log, Date.now);
    const slave = new History(tempDir('whisker-an-slave-'), retention, log, Date.now);
    await Promise.all([master.open(), slave.open()]);
    await master.inStep();
    await slave.inStep();
    const t0 = Date.now() - 120_000;
    // both held these (the slave, then master, fed them to its follower)
    const before = messages('p', 200, t0);
    await Promise.all([master.append(before), slave.append(before)]);
    // the old master wrote the sends in flight at its kill; its follower got them only later
    const inFlight = messages('q', 30, t0 + 10_000);
    await slave.append(inFlight);
    // the follower, elected, placed a peer's offer first, then those sends, then went on
    const offered = messages('s', 25, t0 + 9_000);
    const after = messages('r', newest, t0 + 20_000);
    await master.append(offered);
    await master.append(inFlight);
    await master.append(after);
    // the old master restarts as a slave: out of step, then its sync's catch-up
    await slave.outOfStep();
    await catchUp(master, slave);

    const want = [...before, ...offered, ...inFlight, ...after].map((m) => m.messageId);
    expect(await replayIds(master)).toEqual(want);
    await slave.inStep();
    const got = await replayIds(slave);
    expect(want.filter((id) => !got.includes(id))).toEqual([]);
    expect(got.length - new Set(got).size).toBe(0);
    expect(got).toEqual(want);
    await Promise.all([master.close(), slave.close()]);
  }, 60_000);

  test('a catch-up cut short (its link lost after 12 frames), then another: each record once, in the master\'s order', async () => {
    const log = createLogger('silent');
    const master = new History(tempDir('whisker-an-master-'), retention, log, Date.now);
    const slave = new History(tempDir('whisker-an-slave-'), retention, log, Date.now);
    await Promise.all([master.open(), slave.open()]);
    await master.inStep();
    await slave.inStep();
    const t0 = Date.now() - 120_000;
    const had = messages('p', 20_000, t0);
    await Promise.all([master.append(had), slave.append(had)]);
    const lacked = messages('x', 30_000, t0 + 30_000);
    await master.append(lacked);
    await slave.outOfStep();
    await catchUp(master, slave, 12);
    await catchUp(master, slave);
    await slave.inStep();
    const got = await replayIds(slave);
    expect(got.length - new Set(got).size).toBe(0);
    expect(got).toEqual([...had, ...lacked].map((m) => m.messageId));
    await Promise.all([master.close(), slave.close()]);
  }, 60_000);

  test('the master finds the follower\'s older anchors past the records it lacks between them and its newest (15,000)', async () => {
    const log = createLogger('silent');
    const master = new History(tempDir('whisker-an-master-'), retention, log, Date.now);
    const slave = new History(tempDir('whisker-an-slave-'), retention, log, Date.now);
    await Promise.all([master.open(), slave.open()]);
    await master.inStep();
    await slave.inStep();
    const t0 = Date.now() - 120_000;
    const had = messages('p', 10_030, t0);
    await slave.append(had);
    const lacked = messages('x', 15_000, t0 + 5_000);
    await master.append(had.slice(0, 10_000));
    await master.append(lacked);
    await master.append(had.slice(10_000));
    await slave.outOfStep();
    await catchUp(master, slave);
    await slave.inStep();
    const got = new Set(await replayIds(slave));
    expect(lacked.filter((m) => !got.has(m.messageId)).length).toBe(0);
    await Promise.all([master.close(), slave.close()]);
  }, 60_000);
});
