import { describe, expect, test } from 'vitest';
import { History } from '../../../src/broker/history/history.js';
import { makeStoredMessage, type StoredMessage } from '../../../src/broker/store/store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { tempDir } from '../../support/harness.js';

/**
 * Outside check atk27i, I3: a master's replay read its history while the master was fenced and
 * elected again while catching up: that election's join takes the side line's recent records out
 * of its files, to hold them until the peers' offers are in. The replay, reading the files, lacked
 * them (2,295-6,417 sends the master had answered OK before the replay was asked, in 5 of 905
 * replays). docs/protocol.md#replay: a master's replay holds every send answered before it.
 */
const QUEUE = 'rj/v1';
const retention = () => ({ seconds: 3_600 });

function messages(prefix: string, count: number, at: number): StoredMessage[] {
  return Array.from({ length: count }, (_, n) => makeStoredMessage(n + 1, { messageId: `${prefix}${n}`, queue: QUEUE, id: 'k', data: { n: `${prefix}${n}`, pad: 'x'.repeat(2_000) }, created: at + n, acceptedAt: at + n, from: 'producer' }));
}

describe("a master's replay while its role changes (real history files)", () => {
  test('fenced, its replay begun, elected again while catching up during the read: the replay holds every record written before it began', async () => {
    const history = new History(tempDir('whisker-rj-'), retention, createLogger('silent'), Date.now);
    await history.open();
    const t0 = Date.now() - 10_000;
    const before = messages('m', 50, t0);
    await history.append(before);
    // fenced: its own writes go to its side line (the replay asked of it as master waited, and
    // begins now: nothing is held back)
    await history.outOfStep();
    const side = messages('s', 50, t0 + 1_000);
    await history.append(side, true);
    // the replay begins, and is slow to read (its reader paused on the first record)
    let resume: () => void = () => undefined;
    const paused = new Promise<void>((resolve) => (resume = resolve));
    const got: string[] = [];
    let reachedFirst: () => void = () => undefined;
    const first = new Promise<void>((resolve) => (reachedFirst = resolve));
    const reading = history.read(
      QUEUE,
      {},
      (record) => {
        got.push(record.messageId);
        if (got.length > 1) return true;
        reachedFirst();
        return paused.then(() => true);
      },
      30_000,
    );
    await first;
    // meanwhile elected again while catching up: the join holds the side line's recent records
    // again, for the peers' offers
    await history.inStep(true);
    resume();
    await reading;
    const answered = [...before, ...side].map((m) => m.messageId);
    const missing = answered.filter((id) => !got.includes(id));
    console.log(`replay during a fence and an election while catching up: ${got.length} records of ${answered.length} written before it began; missing ${missing.length}`);
    expect(missing).toEqual([]);
    await history.inStep();
    await history.close();
  });
});
