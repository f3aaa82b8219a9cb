import { describe, expect, test } from 'vitest';
import { type DeliveryRecord, type Entry, Group, NO_RECORDS } from '../../../src/broker/queue/group.js';
import type { StoredMessage } from '../../../src/broker/store/store.js';

/**
 * A group's ready lists let go of settled records without a delivery (issue 27 item 11: a slave
 * never delivers). Settled from the front they go at once; settled behind a record that stays,
 * the list is swept so its slots stay within about twice its live records plus 1,024.
 */
function record(group: Group, seq: number): DeliveryRecord {
  const entry = { message: { seq } as unknown as StoredMessage, records: NO_RECORDS, unassigned: false, pending: 1 } as Entry;
  return { entry, group, state: 'ready', slot: null, nbRequeues: 0, notBefore: 0, deliveredTo: null, deadline: 0 };
}

/** what the queue does when it settles a listed record */
function settle(r: DeliveryRecord): void {
  r.state = 'settled';
  r.slot = null;
  r.group.unlisted();
}

describe('group ready lists', () => {
  test('first deliveries settled in order without a delivery: no slot is kept', () => {
    const group = new Group('consume', '', '*');
    for (let seq = 1; seq <= 10_000; seq++) {
      const r = record(group, seq);
      group.pushFresh(r);
      settle(r);
    }
    expect(group.listedSlots).toBe(0);
  });

  test('settled behind one record that stays: the slots stay bounded, the one left is still next', () => {
    const group = new Group('consume', '', '*');
    const first = record(group, 1);
    group.pushFresh(first);
    for (let seq = 2; seq <= 20_000; seq++) {
      const r = record(group, seq);
      group.pushFresh(r);
      settle(r);
    }
    expect(group.listedSlots).toBeLessThanOrEqual(1 + 1024 + 1);
    expect(group.peekReady()).toBe(first);
  });

  test('retries settled without a delivery: the heap is swept too, order kept', () => {
    const group = new Group('consume', '', '*');
    const kept = [record(group, 5), record(group, 3)];
    for (const r of kept) group.pushRetry(r);
    for (let seq = 10; seq < 20_000; seq++) {
      const r = record(group, seq);
      group.pushRetry(r);
      settle(r);
    }
    expect(group.listedSlots).toBeLessThanOrEqual(2 + 1024 + 1);
    expect(group.peekReady()).toBe(kept[1]);
  });
});
