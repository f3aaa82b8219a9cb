import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { compilePolicy } from '../../../src/broker/access/policy.js';
import { Lifecycle } from '../../../src/broker/lifecycle.js';
import { Router } from '../../../src/broker/messages/router.js';
import { Replica } from '../../../src/broker/mirror/replica.js';
import { Subscription } from '../../../src/broker/queue/subscription.js';
import { LogStore } from '../../../src/broker/store/log.js';
import { makeStoredMessage } from '../../../src/broker/store/store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import type { Delivery, PeerMessage } from '../../../src/protocol/frames.js';
import { brokerConfig } from '../../support/harness.js';
import { slowly } from '../../support/slow-store.js';

/**
 * A slave gets each message twice, the client's copy and its master's feed, and the master's
 * settlements per group (issue 30 with in-order admission, messages/appends.ts): some copies
 * are durable and wait for an earlier slower append while settlements, removals and
 * compactions go on. Promoted, it must deliver to each group what the master had not settled.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


const id = (n: number) => `${((n * 2654435761) >>> 0).toString(16).padStart(8, '0')}${n.toString(16).padStart(24, '0')}`;
const CONSUMERS = 'c|1';
const LISTENER = 'l|listener|1';

async function run(seed: number): Promise<void> {
  let x = seed;
  const random = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const dir = mkdtempSync(join(tmpdir(), 'whisker-slave-admission-'));
  dirs.push(dir);
  const config = brokerConfig({ defaultPolicy: 'allow', isMaster: false, dedupeWindow: 60, maxItemsInQueue: 100_000, memoryWindow: 8, requeueLimit: 1000 }, dir);
  const log = new LogStore(join(dir, 'store'), { compactBytes: 8 * 1024, compactRatio: 2, idleCompactMs: 5, dedupeWindowMs: 60_000, eventDelayMs: 2 });
  const router = new Router({ policy: compilePolicy(config), store: slowly(log, () => (random() < 0.3 ? Math.floor(random() * 25) : 0)), log: createLogger('silent'), now: Date.now, lifecycle: new Lifecycle() });
  await router.restore();
  const replica = new Replica(router);
  router.setFollowsMaster(true);
  const got = new Map<string, Set<number>>([[CONSUMERS, new Set()], [LISTENER, new Set()]]);
  const owner = (name: string, key: string) => ({ clientName: name, label: name, isWritable: () => true, queueDelivery: (d: Delivery) => void got.get(key)!.add((d.data as { n: number }).n) });
  router.subscribe(new Subscription(owner('worker', CONSUMERS), 1, 'consume', 'jobs/v1', 100_000), ['1']);
  router.subscribe(new Subscription(owner('listener', LISTENER), 2, 'listen', 'jobs/v1', 100_000), ['1']);

  const N = 400;
  const messages: PeerMessage[] = [];
  /** per message, what the master settled: groups, and removed */
  const settled = new Map<number, Set<string>>();
  const stored = new Set<number>();
  type Step = { at: number; run: () => Promise<void> | void };
  const steps: Step[] = [];
  for (let n = 0; n < N; n++) {
    const m: PeerMessage = { messageId: id(n), queue: 'jobs/v1', id: '1', data: { n }, created: Date.now(), acceptedAt: Date.now(), from: 'producer' };
    messages.push(m);
    const t = n * 2;
    // the client's copy, as intake takes it (a copy under way waits for it; a known one is not stored again)
    if (random() < 0.9) {
      steps.push({
        at: t + random() * 20,
        run: async () => {
          const underWay = router.appendUnderWay(m.messageId);
          if (underWay) return underWay.then(() => void stored.add(n), () => undefined);
          if (router.isKnown(m.messageId)) return;
          await router.store([makeStoredMessage(router.nextSeq(), m)], true).then(() => void stored.add(n), () => undefined);
        },
      });
    }
    const fed = t + random() * 30;
    steps.push({ at: fed, run: () => replica.applyMessages([m]).then(() => void stored.add(n), () => undefined) });
    const done = new Set<string>();
    settled.set(n, done);
    let last = fed;
    for (const group of [CONSUMERS, LISTENER]) {
      if (random() < 0.7) {
        const at = fed + 1 + random() * 60;
        last = Math.max(last, at);
        steps.push({ at, run: () => {
          done.add(group);
          replica.applySettled([{ messageId: m.messageId, group }], []);
        } });
      }
    }
    if (random() < 0.6) {
      steps.push({ at: last + 1 + random() * 10, run: () => {
        if (done.size < 2) return;
        replica.applySettled([], [m.messageId]);
      } });
    }
  }
  steps.sort((a, b) => a.at - b.at);
  const started = Date.now();
  const pending: Promise<void>[] = [];
  for (const step of steps) {
    const wait = started + step.at - Date.now();
    if (wait > 0) await sleep(wait);
    const result = step.run();
    if (result) pending.push(result);
  }
  await Promise.all(pending);
  await sleep(50);
  router.setFollowsMaster(false);
  router.setMaster(true);
  const expected = new Map<string, number[]>([[CONSUMERS, []], [LISTENER, []]]);
  for (let n = 0; n < N; n++) for (const group of [CONSUMERS, LISTENER]) if (stored.has(n) && !settled.get(n)!.has(group)) expected.get(group)!.push(n);
  for (let i = 0; i < 100; i++) {
    if ([...expected].every(([group, ns]) => ns.every((n) => got.get(group)!.has(n)))) break;
    await sleep(20);
  }
  router.close();
  replica.close();
  await log.close();
  const missing = Object.fromEntries([...expected].map(([group, ns]) => [group, ns.filter((n) => !got.get(group)!.has(n))]));
  expect({ seed, missing }).toEqual({ seed, missing: { [CONSUMERS]: [], [LISTENER]: [] } });
}

describe('a slave: client copies and the feed, admitted in the order their appends began', () => {
  test('promoted, it delivers to each group what its master had not settled', async () => {
    for (let seed = Number(process.env.FIRST_SEED ?? 1); seed <= Number(process.env.LAST_SEED ?? 5); seed++) await run(seed);
  }, 120_000);
});
