import { describe, expect, test } from 'vitest';
import { History } from '../../../src/broker/history/history.js';
import { makeStoredMessage, type StoredMessage } from '../../../src/broker/store/store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { tempDir } from '../../support/harness.js';

/**
 * The records a broker writes at its restart for messages its log holds and its history lacks
 * (a kill -9 between the two writes: `history made whole after a stop`, docs/operations.md#history-catch-up).
 * They were accepted before the stop. Written with its own writes while it is out of step, they
 * were then taken for recent clients' copies at its join and held again: a master elected while
 * catching up wrote them after what its peers offered meanwhile (sends made after the restart),
 * and a slave after what its master's feed placed. Outside check atk31h (calloff-a-down with
 * A_FAILOVER, both brokers of set a killed -9 and restarted, each `written: 60`): the replay on
 * the elected slave ended with those 60 records, sent at +5.3 s, after records sent at +8.4 s.
 */
const QUEUE = 'mw/v1';
const retention = () => ({ seconds: 3_600 });

function messages(prefix: string, count: number, at: number): StoredMessage[] {
  return Array.from({ length: count }, (_, n) => makeStoredMessage(n + 1, { messageId: `${prefix}${n}`, queue: QUEUE, id: 'k', data: { n: `${prefix}${n}` }, created: at + n, acceptedAt: at + n, from: 'producer' }));
}

async function replay(history: History): Promise<string[]> {
  const ids: string[] = [];
  await history.read(QUEUE, {}, (record) => {
    ids.push(record.messageId);
    return true;
  });
  return ids;
}

/** a broker whose history kept `kept` and whose log also held `lost`, restarted out of step */
async function restarted(): Promise<{ history: History; kept: StoredMessage[]; lost: StoredMessage[]; dir: string }> {
  const dir = tempDir('whisker-mw-');
  const t0 = Date.now() - 10_000;
  const kept = messages('k', 5, t0);
  const lost = messages('m', 5, t0 + 100);
  const before = new History(dir, retention, createLogger('silent'), Date.now);
  await before.open();
  await before.inStep();
  await before.append(kept);
  await before.close();
  const history = new History(dir, retention, createLogger('silent'), Date.now);
  await history.open();
  // the router at start: the role first (a slave, or a master still to be elected: out of step), then what the history lacks
  await history.outOfStep();
  const held = [...kept, ...lost];
  const missing = await history.recover(held, (id) => held.some((m) => m.messageId === id), 60_000);
  expect(missing.map((m) => m.messageId)).toEqual(lost.map((m) => m.messageId));
  await history.append(missing);
  return { history, kept, lost, dir };
}

describe('records made whole at a restart keep their place (real history files)', () => {
  test('elected while catching up: written before what its peers offer', async () => {
    const { history, kept, lost } = await restarted();
    // elected while catching up: clients' copies wait for the peers' offers
    await history.inStep(true);
    const offered = messages('o', 5, Date.now() - 1_000);
    await history.place(offered, () => true);
    // the offers ended: what it held is written
    await history.inStep();
    expect(await replay(history)).toEqual([...kept, ...lost, ...offered].map((m) => m.messageId));
    await history.close();
  });

  test('elected while catching up, then killed -9 once their messages were delivered and settled: the history keeps them', async () => {
    const { history, kept, lost, dir } = await restarted();
    await history.inStep(true);
    // the master delivers what its queues hold (those messages included), the consumer acks them:
    // they leave the log. Killed -9 before its peers' offers ended (no close: nothing more written)
    void history;
    const again = new History(dir, retention, createLogger('silent'), Date.now);
    await again.open();
    await again.outOfStep();
    // the log holds neither `kept` nor `lost` any more (settled): nothing to make whole
    expect(await again.recover([], () => false, 60_000)).toEqual([]);
    await again.inStep();
    // before: held in memory again at the join (their records taken off the disk), they were gone (atk31h a-down-nomove run3: replay lacked 139 answered sends)
    expect(await replay(again)).toEqual([...kept, ...lost].map((m) => m.messageId));
    await again.close();
  });

  test('a slave whose master does not bring them: written before what its master\'s feed places', async () => {
    const { history, kept, lost } = await restarted();
    // its master's catch-up brought nothing it lacked; in step, placing
    await history.inStep(true);
    const fed = messages('f', 5, Date.now() - 1_000);
    await history.place(fed, () => true);
    // elected later
    await history.outOfStep();
    await history.inStep();
    expect(await replay(history)).toEqual([...kept, ...lost, ...fed].map((m) => m.messageId));
    await history.close();
  });
});
