import { describe, expect, test } from 'vitest';
import { History } from '../../../src/broker/history/history.js';
import { makeStoredMessage, type StoredMessage } from '../../../src/broker/store/store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { tempDir } from '../../support/harness.js';

/**
 * A slave's history when a hand-over (a call-off's hand-back, SPEC §13, issue 31) carries
 * messages the slave holds as clients' copies waiting for its master's feed: set b's brokers,
 * killed as the move was called off, had stored sends they never answered; the client sent them
 * again to set a (the map named a again), and b handed them back once restarted. The hand-back
 * writes their records (in b's order); the held copy was written again when the feed placed it,
 * or when the slave, elected, wrote what it held (outside check atk31g F2: a replay on set a
 * gave 585 of b's 607 handed-back records twice).
 */
const QUEUE = 'hb/v1';
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

/** a slave in step, the move called off, clients' copies of sends b also stored held for the feed; then b's hand-back */
async function slaveTakesHandBack(): Promise<{ slave: History; handBack: StoredMessage[]; resent: StoredMessage[]; after: StoredMessage[] }> {
  const slave = new History(tempDir('whisker-hb-slave-'), retention, createLogger('silent'), Date.now);
  await slave.open();
  await slave.inStep(true); // clients' copies wait for the master's feed
  const t0 = Date.now() - 60_000;
  // the call-off: the queue's records wait for set b's hand-back
  slave.holdMoving(QUEUE);
  // sends b stored but did not answer before it was killed: the client sends them again, to set a
  const resent = messages('r', 5, t0 + 500);
  await slave.append(resent, true);
  const after = messages('a', 5, t0 + 2_000);
  await slave.append(after, true);
  // b's hand-back: what it took during the move, the unanswered ones among them. Those the slave
  // holds aside (the client's copies) are not stored again: not in `appendedNext`
  const taken = messages('h', 5, t0);
  const handBack = [...taken, ...resent];
  expect(await slave.adopt(QUEUE, records(handBack), new Set(taken.map((m) => m.messageId)))).toBe(10);
  await slave.append(taken);
  slave.releaseMoving(QUEUE);
  return { slave, handBack, resent, after };
}

describe('a hand-over carrying messages a slave holds as clients\' copies (real history files)', () => {
  test('the master\'s feed places them after the hand-back: each record once, in the hand-back\'s order', async () => {
    const { slave, handBack, resent, after } = await slaveTakesHandBack();
    await slave.place([...resent, ...after], () => false);
    await slave.inStep(); // elected: what it replays
    expect(await replay(slave)).toEqual([...handBack, ...after].map((m) => m.messageId));
    await slave.close();
  });

  test('its master fenced before its feed placed them, the slave elected: each record once', async () => {
    const { slave, handBack, after } = await slaveTakesHandBack();
    await slave.outOfStep();
    await slave.inStep();
    expect(await replay(slave)).toEqual([...handBack, ...after].map((m) => m.messageId));
    await slave.close();
  });
});
