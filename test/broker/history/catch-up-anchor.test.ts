import { describe, expect, test } from 'vitest';
import { History } from '../../../src/broker/history/history.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { tempDir } from '../../support/harness.js';
import { historyMessages, replayIds as replayOf, streamCatchUp } from '../../support/history-catch-up.js';

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

const messages = (prefix: string, count: number, at: number) => historyMessages(QUEUE, prefix, count, at);
const replayIds = (history: History) => replayOf(history, QUEUE);

/** the catch-up as a master sends it and a follower writes it, then the join; `cut`: frames applied before its link is lost (no join) */
async function catchUp(master: History, slave: History, cut?: number): Promise<void> {
  await streamCatchUp(master, slave, { cut });
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

  /**
   * Outside check atk27i I1 (run i3-w30-1): a slave's catch-up from master a was cut short (a
   * killed -9); the next master c had placed 243 sends before the slave's newest records that a
   * never sent it (a held them), so a catch-up following the slave's newest records lacked them
   * for good. And atk27i I2's shape: the next master placed late a block the first catch-up wrote
   * early (its clients' copies, held while it caught up): written twice.
   */
  test.each([
    ['the new master placed records before the follower\'s newest that the old one never sent', 'before'],
    ['the new master placed late a block the old one placed early', 'late'],
  ])('a catch-up cut short from one master, then one from another (%s): the new master\'s history, each record once', async (_label, shape) => {
    const log = createLogger('silent');
    const [oldMaster, newMaster, slave] = ['old', 'new', 'slave'].map((n) => new History(tempDir(`whisker-an-${n}-`), retention, log, Date.now));
    await Promise.all([oldMaster!.open(), newMaster!.open(), slave!.open()]);
    for (const h of [oldMaster!, newMaster!, slave!]) await h.inStep();
    const t0 = Date.now() - 120_000;
    const had = messages('p', 1_000, t0);
    for (const h of [oldMaster!, newMaster!, slave!]) await h.append(had);
    const x = messages('x', 20_000, t0 + 10_000);
    const z = messages('z', 243, t0 + 40_000);
    if (shape === 'before') {
      await oldMaster!.append(x);
      await newMaster!.append([...x.slice(0, 19_800), ...z, ...x.slice(19_800)]);
    } else {
      await oldMaster!.append([...z, ...x]);
      await newMaster!.append([...x, ...z]);
    }
    await slave!.outOfStep();
    await catchUp(oldMaster!, slave!, 1_000);
    await catchUp(newMaster!, slave!);
    await slave!.inStep();
    const got = await replayIds(slave!);
    expect(got.length - new Set(got).size).toBe(0);
    expect(z.filter((m) => !got.includes(m.messageId)).length).toBe(0);
    expect(got).toEqual(await replayIds(newMaster!));
    await Promise.all([oldMaster!.close(), newMaster!.close(), slave!.close()]);
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
