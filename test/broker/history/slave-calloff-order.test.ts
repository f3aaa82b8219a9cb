import { describe, expect, test } from 'vitest';
import { History } from '../../../src/broker/history/history.js';
import { makeStoredMessage, type StoredMessage } from '../../../src/broker/store/store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { tempDir } from '../../support/harness.js';

/**
 * A slave's history when a move is called off (SPEC §13, issue 31): a slave in step holds the
 * records of clients' copies until its master's feed places them; the call-off holds the
 * queue's new records until set b's hand-back is written before them. A client's copy the
 * slave held when it saw the call-off was sent before the move: its record goes before the
 * hand-back even when the master's feed places it only after. Before the fix it went after it:
 * test/broker/cluster/move-calledoff.test.ts (set a's master killed as b hands back, its slave
 * elected) replayed each id out of order at the call-off (1 run of 6: `595,596,597,599,...`, 598 later).
 */
const QUEUE = 'co/v1';
const retention = () => ({ seconds: 3_600 });

function messages(prefix: string, count: number, at: number): StoredMessage[] {
  return Array.from({ length: count }, (_, n) => makeStoredMessage(n + 1, { messageId: `${prefix}${n}`, queue: QUEUE, id: 'k', data: { n: `${prefix}${n}` }, created: at + n, acceptedAt: at + n, from: 'producer' }));
}

const records = (list: readonly StoredMessage[]) => list.map(({ messageId, id, acceptedAt, created, from, data }) => ({ messageId, id, acceptedAt, created, from, data }));

async function replay(history: History): Promise<string[]> {
  const ids: string[] = [];
  await history.read(QUEUE, {}, (record) => {
    ids.push(record.messageId);
    return true;
  });
  return ids;
}

describe('a slave\'s history at a call-off (real history files)', () => {
  test('the records it held for its master\'s feed when it saw the call-off go before the hand-back, those of later sends after it', async () => {
    const slave = new History(tempDir('whisker-co-slave-'), retention, createLogger('silent'), Date.now);
    await slave.open();
    await slave.inStep(true); // a slave in step: clients' copies wait for the feed
    const t0 = Date.now() - 60_000;
    const placed = messages('p', 10, t0);
    await slave.append(placed, true);
    await slave.place(placed, () => false);
    // sent before the move froze the queue; the master's feed has not placed them yet
    const late = messages('l', 5, t0 + 100);
    await slave.append(late, true);
    // the call-off: the queue's records wait for set b's hand-back
    slave.holdMoving(QUEUE);
    // the master's feed places the late ones now
    await slave.place(late, () => false);
    // sends after the call-off (held aside), then b's hand-back, then what waited
    const after = messages('a', 5, t0 + 2_000);
    await slave.append(after, true);
    await slave.place(after, () => false);
    const handBack = messages('h', 5, t0 + 1_000);
    await slave.adopt(QUEUE, records(handBack), new Set(handBack.map((m) => m.messageId)));
    await slave.append(handBack);
    slave.releaseMoving(QUEUE);
    await slave.inStep(); // elected: what it replays
    expect(await replay(slave)).toEqual([...placed, ...late, ...handBack, ...after].map((m) => m.messageId));
    await slave.close();
  });

  test('its master killed before its feed placed them: they are written before the hand-back the slave takes', async () => {
    const slave = new History(tempDir('whisker-co-slave-'), retention, createLogger('silent'), Date.now);
    await slave.open();
    await slave.inStep(true);
    const t0 = Date.now() - 60_000;
    const late = messages('l', 5, t0);
    await slave.append(late, true);
    slave.holdMoving(QUEUE);
    // the master is gone: no feed places them; the slave takes set b's hand-back, then is elected
    const handBack = messages('h', 5, t0 + 1_000);
    await slave.adopt(QUEUE, records(handBack), new Set(handBack.map((m) => m.messageId)));
    await slave.append(handBack);
    slave.releaseMoving(QUEUE);
    await slave.outOfStep();
    await slave.inStep();
    expect(await replay(slave)).toEqual([...late, ...handBack].map((m) => m.messageId));
    await slave.close();
  });
  test('its master killed, elected while catching up before it takes the hand-back: what it held stays before the hand-back', async () => {
    const slave = new History(tempDir('whisker-co-slave-'), retention, createLogger('silent'), Date.now);
    await slave.open();
    await slave.inStep(true);
    const t0 = Date.now() - 20_000;
    const placed = messages('p', 10, t0);
    await slave.append(placed, true);
    await slave.place(placed, () => false);
    // sent before the move, to this slave only (its master answered E_MOVED): no feed places them
    const late = messages('l', 5, t0 + 100);
    await slave.append(late, true);
    slave.holdMoving(QUEUE);
    // the master killed: out of step (what it held is written, aside), then elected while
    // catching up (its peers' offers awaited: its recent own records wait again to be placed)
    await slave.outOfStep();
    await slave.inStep(true);
    // set b's hand-back, taken as master, then what was sent since the call-off
    const handBack = messages('h', 5, t0 + 1_000);
    await slave.adopt(QUEUE, records(handBack), new Set(handBack.map((m) => m.messageId)));
    await slave.append(handBack);
    slave.releaseMoving(QUEUE);
    // the offers are in: the master's history writes what it held
    await slave.inStep();
    expect(await replay(slave)).toEqual([...placed, ...late, ...handBack].map((m) => m.messageId));
    await slave.close();
  });
});
