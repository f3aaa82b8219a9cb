import { describe, expect, test } from 'vitest';
import { History } from '../../../src/broker/history/history.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { tempDir } from '../../support/harness.js';
import { historyMessages, replayIds, streamCatchUp } from '../../support/history-catch-up.js';

/**
 * A history catch-up cut short (its link lost, its master fenced) and the join that follows it
 * without a whole one (the mirror elected, or its side line joined as it comes into step): the
 * catch-up brought its master's records up to some point, and those win their place over the
 * same records the mirror had. What the mirror had after them, that the catch-up would have
 * brought next, stayed before them: a mirror with 1,500 records like its master's, its catch-up
 * cut after its first frame (1,000 records), replayed p0, p1001-p1499, then p1-p1000 (found by
 * test/broker/history/mirror-fuzz.test.ts, seed 153: 722 records out of send order in both
 * histories at the end). What the mirror had that is older than the catch-up's newest record
 * is not what it would have brought next: it stays where it was (outside check atk27k F4: a
 * mirror killed -9 as master, then during its own sync, held the 4,993 sends it had answered
 * last as master after sends made 20 s later, twice with the same count).
 */
const QUEUE = 'cs/v1';
const retention = () => ({ seconds: 3_600 });

describe('a history catch-up cut short, then a join (real history files)', () => {
  for (const cuts of [1, 2])
    for (const join of ['elected', 'in step'] as const)
      test(`${cuts} catch-up${cuts > 1 ? 's' : ''} cut after one frame, then ${join}: every record once, in order`, async () => {
        const log = createLogger('silent');
        const master = new History(tempDir('whisker-cs-master-'), retention, log, Date.now);
        const slave = new History(tempDir('whisker-cs-slave-'), retention, log, Date.now);
        await Promise.all([master.open(), slave.open()]);
        await master.inStep();
        await slave.inStep();
        const had = historyMessages(QUEUE, 'p', 1_500, Date.now() - 60_000);
        await Promise.all([master.append(had), slave.append(had)]);
        await slave.outOfStep();
        const own = historyMessages(QUEUE, 'q', 20, Date.now() - 1_000);
        await Promise.all([master.append(own), slave.append(own, true)]);
        for (let k = 0; k < cuts; k++) await streamCatchUp(master, slave, { cut: 1 });
        await slave.inStep(join === 'elected');
        if (join === 'elected') await slave.inStep();
        const want = [...had, ...own].map((m) => m.messageId);
        expect(await replayIds(master, QUEUE)).toEqual(want);
        expect(await replayIds(slave, QUEUE)).toEqual(want);
        await Promise.all([master.close(), slave.close()]);
      });

  test('what the mirror had, older than the catch-up\'s newest record and lacking from it, stays in its place', async () => {
    const log = createLogger('silent');
    const master = new History(tempDir('whisker-cs-master-'), retention, log, Date.now);
    const slave = new History(tempDir('whisker-cs-slave-'), retention, log, Date.now);
    await Promise.all([master.open(), slave.open()]);
    await master.inStep();
    await slave.inStep();
    const t0 = Date.now() - 60_000;
    const both = historyMessages(QUEUE, 'p', 600, t0);
    // the mirror's last sends as master before its kill -9 (x), after records (r) its successor
    // placed after them; the successor's sends since (n)
    const onlyHere = historyMessages(QUEUE, 'x', 50, t0 + 10_000);
    const placedAfter = historyMessages(QUEUE, 'r', 10, t0 + 15_000);
    const newer = historyMessages(QUEUE, 'n', 2_000, t0 + 20_000);
    await master.append([...both, ...onlyHere, ...placedAfter, ...newer]);
    await slave.append([...both, ...placedAfter, ...onlyHere]);
    await slave.outOfStep();
    // its catch-up follows its newest record, and is cut after one frame
    await streamCatchUp(master, slave, { cut: 1, anchors: [{ queue: QUEUE, after: ['x49'] }] });
    await slave.inStep();
    const ids = await replayIds(slave, QUEUE);
    expect(ids.slice(0, 660)).toEqual([...both, ...onlyHere, ...placedAfter].map((m) => m.messageId));
    expect(ids.slice(660)).toEqual(newer.slice(0, ids.length - 660).map((m) => m.messageId));
    expect(ids.length).toBeGreaterThan(660);
    await Promise.all([master.close(), slave.close()]);
  });
});
