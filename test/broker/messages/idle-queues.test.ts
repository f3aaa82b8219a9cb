import { describe, expect, test } from 'vitest';
import { compilePolicy } from '../../../src/broker/access/policy.js';
import { Lifecycle } from '../../../src/broker/lifecycle.js';
import { Intake } from '../../../src/broker/messages/intake.js';
import { Router } from '../../../src/broker/messages/router.js';
import { Subscription, type SubscriptionOwner } from '../../../src/broker/queue/subscription.js';
import { MemoryStore } from '../../../src/broker/store/memory.js';
import { createLogger } from '../../../src/runtime/logger.js';
import type { Delivery } from '../../../src/protocol/frames.js';
import { brokerConfig } from '../../support/harness.js';

/** Queues nobody uses are forgotten, and the number of queues is bounded (issue 18, SPEC §7); a clock of our own. */
function setup(overrides: Record<string, unknown> = {}) {
  let clock = 1_000_000;
  const lifecycle = new Lifecycle();
  const router = new Router({ policy: compilePolicy(brokerConfig({ defaultPolicy: 'allow', ...overrides })), store: new MemoryStore(), log: createLogger('silent'), now: () => clock, lifecycle });
  return { router, intake: new Intake(router, lifecycle), advance: (ms: number) => (clock += ms) };
}

function owner(): SubscriptionOwner & { got: Delivery[] } {
  const got: Delivery[] = [];
  return { clientName: 'w', label: 'w', got, isWritable: () => true, queueDelivery: (d) => void got.push(d) };
}

describe('idle queues', () => {
  test('forgotten at the second sweep idleQueueTimeout apart; a subscriber, a waiting or an in-flight message keeps a queue', async () => {
    const { router, intake, advance } = setup({ idleQueueTimeout: 10 });
    const listener = new Subscription(owner(), 1, 'listen', 'used/v1', 1);
    router.subscribe(listener, ['1']);
    const passer = new Subscription(owner(), 2, 'listen', 'gone/v1', 1);
    router.subscribe(passer, ['1']);
    router.unsubscribe(passer);
    await intake.publish('p', [{ messageId: 'w-1', channel: 'waiting/v1/1', data: 1, created: 1 }]);
    const worker = owner();
    const consumer = new Subscription(worker, 3, 'consume', 'busy/v1', 1);
    router.subscribe(consumer, ['1']);
    await intake.publish('p', [{ messageId: 'b-1', channel: 'busy/v1/1', data: 1, created: 1 }]);
    router.unsubscribe(consumer); // requeued: held, waiting again
    expect([...router.queues.keys()].sort()).toEqual(['busy/v1', 'gone/v1', 'used/v1', 'waiting/v1']);

    expect(router.forgetIdleQueues()).toBe(0); // first seen idle now
    advance(9_999);
    expect(router.forgetIdleQueues()).toBe(0);
    advance(1);
    expect(router.forgetIdleQueues()).toBe(1);
    expect([...router.queues.keys()].sort()).toEqual(['busy/v1', 'used/v1', 'waiting/v1']);
    // used again, it is made anew
    router.subscribe(new Subscription(owner(), 4, 'listen', 'gone/v1', 1), ['1']);
    expect(router.queues.has('gone/v1')).toBe(true);
  });

  test('limits.maxQueues: a publish batch and a subscribe that would pass it are E_LIMIT; existing queues still take messages', async () => {
    const { router, intake } = setup({ limits: { maxQueues: 3 } });
    const results = await intake.publish('p', ['a', 'b', 'c', 'd', 'a'].map((q, i) => ({ messageId: `m-${i}`, channel: `${q}/v1/1`, data: 1, created: 1 })));
    expect(results.map((r) => r.error?.code ?? 'ok')).toEqual(['ok', 'ok', 'ok', 'E_LIMIT', 'ok']);
    expect(() => router.subscribe(new Subscription(owner(), 1, 'listen', 'e/v1', 1), ['1'])).toThrow(expect.objectContaining({ code: 'E_LIMIT' }));
    expect(router.subscribe(new Subscription(owner(), 2, 'listen', 'a/v1', 1), ['1'])).toEqual([]);
    expect(router.queues.size).toBe(3);
  });
});
