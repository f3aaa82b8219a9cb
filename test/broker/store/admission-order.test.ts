import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { compilePolicy } from '../../../src/broker/access/policy.js';
import { Lifecycle } from '../../../src/broker/lifecycle.js';
import { Router } from '../../../src/broker/messages/router.js';
import { Subscription } from '../../../src/broker/queue/subscription.js';
import { LogStore } from '../../../src/broker/store/log.js';
import { makeStoredMessage, type StoredMessage } from '../../../src/broker/store/store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import type { Delivery } from '../../../src/protocol/frames.js';
import { brokerConfig } from '../../support/harness.js';
import { slowly } from '../../support/slow-store.js';

/**
 * Appends are admitted into the queues in the order they began (messages/appends.ts): a message
 * can be durable in the store, its id held by the store's index, and wait there while later
 * appends, acks, removals and compactions go on (issue 30: the store's index and the router's
 * rows share one id map). Random runs of that; whatever was answered and not acked must be
 * delivered with its own body, now or after a restart.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


const id = (n: number) => `${(n * 2654435761 >>> 0).toString(16).padStart(8, '0')}${n.toString(16).padStart(24, '0')}`;

async function run(seed: number): Promise<void> {
  let x = seed;
  const random = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const dir = mkdtempSync(join(tmpdir(), 'whisker-admission-'));
  dirs.push(dir);
  const config = brokerConfig({ defaultPolicy: 'allow', dedupeWindow: 60, maxItemsInQueue: 100_000, memoryWindow: 8, requeueLimit: 1000 }, dir);
  const open = async () => {
    const log = new LogStore(join(dir, 'store'), { compactBytes: 8 * 1024, compactRatio: 2, idleCompactMs: 5, dedupeWindowMs: 60_000, eventDelayMs: 2 });
    const router = new Router({ policy: compilePolicy(config), store: slowly(log, () => (random() < 0.2 ? Math.floor(random() * 30) : 0)), log: createLogger('silent'), now: Date.now, lifecycle: new Lifecycle() });
    await router.restore();
    return { router, log };
  };
  let { router, log } = await open();
  const answered = new Set<number>();
  const wrong: string[] = [];
  // two recipient groups, each with its own acks: a consumer group and a listener
  const recipients = [
    { name: 'worker', mode: 'consume' as const, prefetch: 20, acked: new Set<number>(), got: [] as Delivery[], sub: null as Subscription | null },
    { name: 'listener', mode: 'listen' as const, prefetch: 1, acked: new Set<number>(), got: [] as Delivery[], sub: null as Subscription | null },
  ];
  let subs = 0;
  const subscribe = (prefetch?: number) => {
    for (const r of recipients) {
      r.got = [];
      const owner = { clientName: r.name, label: r.name, isWritable: () => true, queueDelivery: (d: Delivery) => void r.got.push(d) };
      r.sub = new Subscription(owner, ++subs, r.mode, 'jobs/v1', prefetch ?? r.prefetch);
      router.subscribe(r.sub, ['1']);
    }
  };
  const check = (d: Delivery) => {
    const n = (d.data as { n: number }).n;
    if (d.messageId !== id(n)) wrong.push(`${d.messageId} came with the body of ${id(n)}`);
    return n;
  };
  subscribe();
  let next = 0;
  let sends: Promise<void>[] = [];
  for (let step = 0; step < 150; step++) {
    const r = random();
    if (r < 0.45) {
      const batch: StoredMessage[] = [];
      const ns: number[] = [];
      for (let k = 1 + Math.floor(random() * 8); k > 0; k--) {
        const n = next++;
        ns.push(n);
        batch.push(makeStoredMessage(router.nextSeq(), { messageId: id(n), queue: 'jobs/v1', id: '1', data: { n }, created: Date.now(), acceptedAt: Date.now(), from: 'producer' }));
      }
      sends.push(router.store(batch, true).then(() => ns.forEach((n) => answered.add(n)), () => undefined));
    } else if (r < 0.85) {
      for (const recipient of recipients) {
        for (const d of recipient.got.splice(0)) {
          const n = check(d);
          if (random() < 0.8) {
            router.ack(recipient.sub!, d.messageId, '1', true, 0);
            recipient.acked.add(n);
          } else router.ack(recipient.sub!, d.messageId, '1', false, 0);
        }
      }
    } else if (r < 0.98) {
      await sleep(Math.floor(random() * 10));
    } else {
      // a restart: the appends under way end first (an answered one is durable)
      await Promise.all(sends);
      sends = [];
      router.close();
      await log.close();
      ({ router, log } = await open());
      subscribe();
    }
    await new Promise((r) => setImmediate(r));
  }
  await Promise.all(sends);
  router.close();
  await log.close();
  ({ router, log } = await open());
  subscribe(100_000);
  const expected = recipients.map((r) => [...answered].filter((n) => !r.acked.has(n)).sort((a, b) => a - b));
  for (let i = 0; i < 100 && recipients.some((r, k) => r.got.length < expected[k]!.length); i++) await sleep(20);
  const missing = recipients.map((r, k) => {
    const waiting = new Set(r.got.map(check));
    return expected[k]!.filter((n) => !waiting.has(n));
  });
  router.close();
  await log.close();
  expect(wrong).toEqual([]);
  expect({ seed, missing }).toEqual({ seed, missing: [[], []] });
}

describe('admission in the order appends began, with one id map for the store and the rows', () => {
  test('random sends answered late, acks, nacks, compactions and restarts: nothing answered and unacked is lost', async () => {
    for (let seed = 1; seed <= Number(process.env.ADMISSION_SEEDS ?? 5); seed++) await run(seed);
  }, 120_000);
});
