import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { compilePolicy } from '../../../src/broker/access/policy.js';
import { Lifecycle } from '../../../src/broker/lifecycle.js';
import type { AsideFile, AsideQueue } from '../../../src/broker/messages/aside-file.js';
import { Intake } from '../../../src/broker/messages/intake.js';
import { Router } from '../../../src/broker/messages/router.js';
import { InStepLog } from '../../../src/broker/mirror/in-step-log.js';
import { Replica } from '../../../src/broker/mirror/replica.js';
import { MemoryStore } from '../../../src/broker/store/memory.js';
import { makeStoredMessage, type RecoveredState } from '../../../src/broker/store/store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { brokerConfig } from '../../support/harness.js';

/**
 * A slave restarted (kill -9) while a queue moved to its set, or back to it after a call-off,
 * keeps that queue aside (aside.json, messages/moving.ts). When the move ended while it was
 * down, the placements read at start release what waits aside (cluster/move.ts
 * #settleRestored: `releaseAside`, then `freeze(false)`), often before its master's sync brought
 * the older messages: outside check atk31h calloff-a-down A_FAILOVER run7, the restarted slave
 * a2, elected, gave a consumer `seq 452 after 792` (1,279 order breaks). Its clients' copies
 * must wait for the sync as any client's copy of a mirror catching up does (catch-up-hold.ts),
 * and what its master brought must not.
 */
class LoadedStore extends MemoryStore {
  constructor(readonly state: RecoveredState) {
    super();
  }
  override async load(): Promise<RecoveredState> {
    return this.state;
  }
}

const QUEUE = 'jobs/v1';
/** the seqs a move sets apart (moving.ts MOVE_SEQS): a message stored past them was put aside */
const MOVE_SEQS = 1 << 22;
const sent = (messageId: string) => ({ messageId, channel: `${QUEUE}/1`, data: { n: messageId }, created: Date.now() });
const fromMaster = (messageId: string) => ({ messageId, queue: QUEUE, id: '1', data: { n: messageId }, created: Date.now(), acceptedAt: Date.now(), from: 'p' });

/** a slave that restarts with `old` queued and `aside` put aside before it stopped (accepted `asideAt`); its catch-up begins (broker/parts.ts) */
async function restarted(old: readonly string[], aside: readonly string[], inStepLog: InStepLog | null = null, asideAt = Date.now(), now: () => number = Date.now) {
  const asideQueues: readonly AsideQueue[] = [{ queue: QUEUE, before: 100 }];
  const messages = [...old.map((id, n) => makeStoredMessage(n + 1, fromMaster(id))), ...aside.map((id, n) => makeStoredMessage(100 + MOVE_SEQS + 1 + n, { ...fromMaster(id), acceptedAt: asideAt }))];
  const store = new LoadedStore({ messages: messages.map((message) => ({ message, records: [] })), recent: [] });
  const file = { load: () => asideQueues, save: () => undefined } as unknown as AsideFile;
  const lifecycle = new Lifecycle();
  const router = new Router({ policy: compilePolicy(brokerConfig({ defaultPolicy: 'allow', isMaster: false, maxItemsInQueue: 1_000_000 })), store, log: createLogger('silent'), now, lifecycle, asideFile: file });
  await router.restore();
  router.catchUp.begin();
  return { router, intake: new Intake(router, lifecycle), replica: new Replica(router, false, inStepLog) };
}

const queued = (router: Router) => [...(router.queues.get(QUEUE)?.heldMessages() ?? [])].map((m) => m.messageId);
const held = (router: Router) => [...router.catchUp.heldCopies()].map((m) => m.messageId);

describe('a restarted slave catching up, a queue it kept aside (messages/moving.ts, catch-up-hold.ts)', () => {
  test("the move ended while it was down: released before its master's sync, its clients' copies wait for the sync (atk31h calloff-a-down run7: 1,279 order breaks)", async () => {
    // stopped during a call-off: `old` was queued before the move, `aside-1` sent after the call-off
    const { router, intake, replica } = await restarted(['old-1'], ['aside-1']);
    expect(queued(router)).toEqual(['old-1']);
    // a client's copy before the placements are read: aside too
    await intake.publish('p', [sent('new-1')]);
    // the placements read: the call-off ended (set a's master took the hand-back), released as #settleRestored does
    router.moving.releaseRestored(QUEUE);
    router.moving.freeze(QUEUE, false);
    // a client's copy after it: still catching up
    await intake.publish('p', [sent('new-2')]);
    expect(queued(router)).toEqual(['old-1']);
    // the master's sync: the hand-back (handed-1) before what was sent after the call-off
    await replica.applyMessages([fromMaster('old-1'), fromMaster('handed-1'), fromMaster('aside-1'), fromMaster('new-1')]);
    replica.endCatchUp('in step', true);
    // in step: new-2 waits for the master's feed to name it
    expect(queued(router)).toEqual(['old-1', 'handed-1', 'aside-1', 'new-1']);
    expect(held(router)).toEqual(['new-2']);
    await replica.applyMessages([fromMaster('new-2')]);
    expect(queued(router)).toEqual(['old-1', 'handed-1', 'aside-1', 'new-1', 'new-2']);
    expect(held(router)).toEqual([]);
  });

  test('released while catching up: what its master brought is queued at once, a copy it named while aside in the place it named it (no wait for a naming)', async () => {
    const { router, intake, replica } = await restarted([], []);
    await intake.publish('p', [sent('c1'), sent('c2')]);
    // the sync comes while the queue is still aside (the move under way): its messages wait aside too; it names c1
    await replica.applyMessages([fromMaster('m1'), fromMaster('c1')]);
    router.moving.releaseRestored(QUEUE);
    router.moving.freeze(QUEUE, false);
    expect(queued(router)).toEqual(['m1', 'c1']);
    expect(held(router)).toEqual(['c2']);
    replica.endCatchUp('in step', true);
    await replica.applyMessages([fromMaster('c2')]);
    expect(queued(router)).toEqual(['m1', 'c1', 'c2']);
  });

  test('in step already when the placements are read (its sync done): what waited aside is queued at once, not held for a naming that no sync will bring (calloff-a-stop run7 on a first version: 10 order breaks)', async () => {
    const { router, intake, replica } = await restarted(['old-1'], ['aside-1']);
    await intake.publish('p', [sent('new-1')]);
    await replica.applyMessages([fromMaster('old-1')]);
    replica.endCatchUp('in step', true);
    router.moving.releaseRestored(QUEUE);
    expect(queued(router)).toEqual(['old-1', 'aside-1', 'new-1']);
    expect(held(router)).toEqual([]);
  });

  test('a queue moved away while it was down: what waited aside is dropped with the queue, none of it held', async () => {
    const { router, intake } = await restarted(['old-1'], ['aside-1']);
    await intake.publish('p', [sent('new-1')]);
    router.moving.releaseAside(QUEUE);
    router.moving.dropMoved(QUEUE);
    expect(queued(router)).toEqual([]);
    expect(held(router)).toEqual([]);
  });

  test('unfreezing a queue does not end the catch-up: a client copy of another queue stays held', async () => {
    const { router, intake } = await restarted([], []);
    await intake.publish('p', [{ ...sent('other-1'), channel: 'other/v1/1' }]);
    router.moving.releaseRestored(QUEUE);
    router.moving.freeze(QUEUE, false);
    expect(router.catchUp.active).toBe(true);
    expect(held(router)).toEqual(['other-1']);
  });

  test('a copy it had put aside, older than the dedupe window, accepted in step with its master and not named by its sync: the set settled it, it is forgotten (not offered as new)', async () => {
    // in step with master a from 400 s to 100 s ago; the send put aside 300 s ago, during a move
    let now = Date.now() - 400_000;
    const inStepLog = new InStepLog(join(mkdtempSync(join(tmpdir(), 'aside-catch-up-')), 'in-step.json'), () => now);
    inStepLog.begin('a', 1);
    now += 300_000;
    inStepLog.end();
    now = Date.now();
    const { router, replica } = await restarted([], ['aside-old', 'aside-new'], inStepLog, Date.now() - 300_000);
    router.moving.releaseRestored(QUEUE);
    router.moving.freeze(QUEUE, false);
    expect(held(router)).toEqual(['aside-old', 'aside-new']);
    // its master's sync named neither: it settled both for good long ago
    const { messages, settled } = await replica.heldOnlyHere(new Set(), 'a', 1);
    expect(messages.map((m) => m.messageId)).toEqual([]);
    expect(settled).toEqual(['aside-old', 'aside-new']);
    replica.forgetSettled(settled);
    expect(held(router)).toEqual([]);
    expect(queued(router)).toEqual([]);
  });

  test('a copy held here past the dedupe window whose record its sync\'s history catch-up brought, not named by the sync: the master settled it, it is forgotten (not offered as new: nemesis seed 27, 6,742 records twice); within the window it is offered (a master catching up may hold it)', async () => {
    let clock = Date.now() - 200_000;
    const { router, intake, replica } = await restarted([], [], null, Date.now(), () => clock);
    // a queue not kept aside: its copies wait for the sync as any client's copy of a mirror catching up
    await intake.publish('p', [{ ...sent('settled-1'), channel: 'other/v1/1' }, { ...sent('only-here'), channel: 'other/v1/1' }]);
    clock = Date.now();
    await intake.publish('p', [{ ...sent('recent-1'), channel: 'other/v1/1' }]);
    expect(held(router)).toEqual(['settled-1', 'only-here', 'recent-1']);
    const record = (messageId: string) => ({ messageId, id: '1', acceptedAt: Date.now(), created: Date.now(), from: 'p', data: { n: messageId } });
    await replica.applyHistory({ type: 'history', n: 1, queue: 'other/v1', after: null, records: [record('settled-1'), record('recent-1'), record('other')], last: true });
    replica.endCatchUp('in step', true);
    const { messages, settled } = await replica.heldOnlyHere(new Set(), 'a', 1);
    expect(settled).toEqual(['settled-1']);
    expect(messages.map((m) => m.messageId)).toEqual(['only-here', 'recent-1']);
  });

  test("after its sync it offers its master what it queued before the copies it holds (a master catching up queues offers in their order: atk31h calloff-a-down run13, 10 listener breaks, 'seq 471 after 782')", async () => {
    // a1 took the call-off's hand-back itself: its sends kept aside are queued; its clients' copies since its restart held
    const { router, intake, replica } = await restarted([], ['aside-1']);
    router.moving.releaseAside(QUEUE);
    router.moving.freeze(QUEUE, false);
    await intake.publish('p', [sent('new-1')]);
    expect(queued(router)).toEqual(['aside-1']);
    expect(held(router)).toEqual(['new-1']);
    // its master's sync named neither (it lacked aside-1, and holds new-1 for its peers' offers)
    replica.endCatchUp('in step', true);
    const { messages } = await replica.heldOnlyHere(new Set(), 'a', 1);
    expect(messages.map((m) => m.messageId)).toEqual(['aside-1', 'new-1']);
  });
});
