import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { InStepLog } from '../../../src/broker/mirror/in-step-log.js';
import { tempDir } from '../../support/harness.js';

/** The file a slave keeps of when it was in step (issue 27): read back after a stop or a kill -9, bounded. */
describe('in-step intervals', () => {
  test('an interval left open (a kill -9) ends at its last write; a closed one at its end; the master must match or be elected later', () => {
    const path = join(tempDir('whisker-in-step-'), 'in-step.json');
    let now = 1_000;
    const first = new InStepLog(path, () => now);
    first.begin('a', 5);
    now = 9_000;
    first.end();
    now = 20_000;
    first.begin('a', 5);
    // its once-a-second write at 30,000, then a kill -9 at 40,000: no end() written
    writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(path, 'utf8')), open: { since: 20_000, asOf: 30_000, master: 'a', epoch: 5 } }));

    now = 50_000;
    const read = new InStepLog(path, () => now);
    expect(read.intervals()).toEqual([
      { since: 1_000, until: 9_000, master: 'a', epoch: 5 },
      { since: 20_000, until: 30_000, master: 'a', epoch: 5 },
    ]);
    expect(read.covers(2_000, 8_000, 'a', 5)).toBe(true);
    expect(read.covers(2_000, 10_000, 'a', 5)).toBe(false); // out of step at 9,000
    expect(read.covers(21_000, 31_000, 'a', 5)).toBe(false); // past the last write
    expect(read.covers(21_000, 29_000, 'c', 5)).toBe(false); // another master, no later election
    expect(read.covers(21_000, 29_000, 'c', 6)).toBe(true); // elected after a
    expect(read.covers(21_000, 29_000, 'c', undefined)).toBe(false);
    first.close(); // its timer
  });

  test('at most 8 closed intervals kept; a file that does not parse is ignored (nothing covered)', () => {
    const dir = tempDir('whisker-in-step-');
    const path = join(dir, 'in-step.json');
    let now = 0;
    const log = new InStepLog(path, () => now);
    for (let i = 0; i < 12; i++) {
      now = i * 100;
      log.begin('a', undefined);
      now += 50;
      log.end();
    }
    const read = new InStepLog(path, () => now);
    expect(read.intervals()).toHaveLength(8);
    expect(read.intervals()[0]).toEqual({ since: 400, until: 450, master: 'a' });
    writeFileSync(path, '{"open":');
    const broken = new InStepLog(path, () => now);
    expect(broken.intervals()).toEqual([]);
    expect(broken.covers(400, 450, 'a', undefined)).toBe(false);
  });
});
