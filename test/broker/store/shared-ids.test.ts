import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { compilePolicy } from '../../../src/broker/access/policy.js';
import { Lifecycle } from '../../../src/broker/lifecycle.js';
import { Router } from '../../../src/broker/messages/router.js';
import { Subscription } from '../../../src/broker/queue/subscription.js';
import { LogStore } from '../../../src/broker/store/log.js';
import { makeStoredMessage } from '../../../src/broker/store/store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import type { Delivery } from '../../../src/protocol/frames.js';
import { brokerConfig } from '../../support/harness.js';

/**
 * The durable store's index and the router's rows share one id map (issue 30): a slot lives from
 * the append until both the queue forgot the message and the store committed its removal, and
 * slots freed are taken again by new messages while compactions capture the index. What a
 * restart finds waiting must be exactly what was not acked, with its body.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function open(dir: string): Promise<{ router: Router; store: LogStore }> {
  // compactions often: every few hundred messages
  const store = new LogStore(join(dir, 'store'), { compactBytes: 32 * 1024, compactRatio: 2, idleCompactMs: 5, dedupeWindowMs: 0 });
  const router = new Router({ policy: compilePolicy(brokerConfig({ defaultPolicy: 'allow', dedupeWindow: 0, maxItemsInQueue: 100_000 }, dir)), store, log: createLogger('silent'), now: Date.now, lifecycle: new Lifecycle() });
  await router.restore();
  return { router, store };
}

const id = (n: number) => (n % 3 === 0 ? `${n.toString(16).padStart(32, '0')}` : n % 3 === 1 ? `m-${n}` : `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`);

async function send(router: Router, from: number, to: number): Promise<void> {
  for (let n = from; n < to; n += 50) {
    const batch = [];
    for (let i = n; i < Math.min(to, n + 50); i++) batch.push(makeStoredMessage(router.nextSeq(), { messageId: id(i), queue: 'jobs/v1', id: '1', data: { n: i }, created: Date.now(), acceptedAt: Date.now(), from: 'producer' }));
    await router.store(batch, true);
  }
}

describe('one id map for the store index and the rows', () => {
  test('acks, new sends into freed slots and compactions meanwhile: a restart finds exactly the unacked, with their bodies', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'whisker-shared-ids-'));
    dirs.push(dir);
    let { router, store } = await open(dir);
    const acked = new Set<number>();
    const got: Delivery[] = [];
    const owner = { clientName: 'worker', label: 'worker', isWritable: () => true, queueDelivery: (d: Delivery) => void got.push(d) };
    // odd ones stay in flight (prefetch large enough), even ones are acked
    const sub = new Subscription(owner, 1, 'consume', 'jobs/v1', 10_000);
    await send(router, 0, 3000);
    router.subscribe(sub, ['1']);
    // acks every even one, sends more between: freed slots are taken again by new ids
    for (let round = 0; round < 6; round++) {
      await new Promise((r) => setTimeout(r, 20));
      for (const d of got.splice(0)) {
        const n = (d.data as { n: number }).n;
        expect(d.messageId).toBe(id(n));
        if (n % 2 === 0) {
          router.ack(sub, d.messageId, '1', true, 0);
          acked.add(n);
        }
      }
      await send(router, 3000 + round * 500, 3500 + round * 500);
    }
    router.unsubscribe(sub);
    await new Promise((r) => setTimeout(r, 100));
    expect(store.stats.compactions).toBeGreaterThan(0);
    expect(acked.size).toBeGreaterThan(500);
    router.close();
    await store.close();

    ({ router, store } = await open(dir));
    const again: Delivery[] = [];
    const sub2 = new Subscription({ ...owner, queueDelivery: (d: Delivery) => void again.push(d) }, 2, 'consume', 'jobs/v1', 10_000);
    router.subscribe(sub2, ['1']);
    for (let i = 0; i < 50 && again.length < 6000 - acked.size; i++) await new Promise((r) => setTimeout(r, 20));
    const waiting = again.map((d) => {
      const n = (d.data as { n: number }).n;
      expect(d.messageId).toBe(id(n));
      return n;
    });
    const expected = [];
    for (let n = 0; n < 6000; n++) if (!acked.has(n)) expected.push(n);
    expect(waiting.sort((a, b) => a - b)).toEqual(expected);
    router.close();
    await store.close();
  }, 60_000);
});
