import { describe, expect, test } from 'vitest';
import { unavailable } from '../support/netns.js';
import { phases, runNemesis } from './run.js';
import { FAULT_KINDS, schedule } from './schedule.js';

/**
 * The nemesis in CI (issue 27, docs/operations.md#the-nemesis): 3 minutes of faults drawn from
 * one seed on a real election cluster under traffic, then every check. NEMESIS_SEED picks
 * another seed (the schedule is printed; `npm run nemesis -- --seed N` replays it by hand).
 */
const why = unavailable();
if (why) console.warn(`nemesis: no network namespaces here (${why}): links are cut by TCP proxies`);

const SEED = Number(process.env.NEMESIS_SEED ?? 27);
const MINUTES = 3;

test(`seed ${SEED}: the 3-minute schedule has every kind of fault`, () => {
  const faults = schedule(SEED, phases(MINUTES).faultMs);
  expect(new Set(faults.map((f) => f.kind))).toEqual(new Set(FAULT_KINDS));
});

// In CI (issue 27): it passed beside the suite in a clean-clone run (69f200b), and the faults it
// found since have tests of their own (docs/operations.md#results). NEMESIS=0 leaves it out of a
// local run; nothing in CI sets that.
const enabled = process.env.NEMESIS !== '0';
if (!enabled) console.warn('nemesis: the 3-minute run left out (NEMESIS=0): docs/operations.md#the-nemesis');

describe.runIf(enabled)(`nemesis (real etcd, three real brokers, ${why ? 'TCP proxies' : 'network namespaces'})`, () => {
  test(`seed ${SEED}, ${MINUTES} minutes: nothing lost, duplicates within the bounds, order kept, replay = answered sends, one deliverer, queues empty, heaps flat`, async () => {
    // one block at the end rather than a vitest header per line
    const lines: string[] = [];
    const log = (line: string) => lines.push(`[nemesis ${new Date().toISOString().slice(11, 23)}] ${line}`);
    try {
      const result = await runNemesis({ seed: SEED, minutes: MINUTES, log });
      expect(result.failed.map((v) => `${v.check}: ${v.detail}`)).toEqual([]);
    } finally {
      console.log(lines.join('\n'));
    }
  }, (MINUTES * 60 + 420) * 1000); // + 60 s: the calm phase waits for a broker restarted late to warm up
});
