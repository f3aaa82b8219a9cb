import { describe, expect, test } from 'vitest';
import { compilePolicy } from '../../../src/broker/access/policy.js';
import { History } from '../../../src/broker/history/history.js';
import type { Cluster } from '../../../src/broker/cluster/cluster.js';
import { Lifecycle } from '../../../src/broker/lifecycle.js';
import type { AsideFile, AsideQueue } from '../../../src/broker/messages/aside-file.js';
import { Intake } from '../../../src/broker/messages/intake.js';
import { Router } from '../../../src/broker/messages/router.js';
import { MemoryStore } from '../../../src/broker/store/memory.js';
import type { RecoveredState, StoredMessage } from '../../../src/broker/store/store.js';
import { WhiskerError } from '../../../src/protocol/errors.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { brokerConfig, tempDir } from '../../support/harness.js';
import { replayIds } from '../../support/history-catch-up.js';

/**
 * A broker whose placement map lags a client's (SPEC §13, issue 31): the client learned that the
 * queue moves to this broker's set (or, on the old set, that the move was called off) from
 * another broker first, and its sends reach this one before its own etcd watch says so. It
 * answers the first ones `E_MOVED` (to the set it still believes), sees the change, and stores
 * the next ones, already on their way, aside; the refused ones come back a moment later (the
 * client re-sends them, same ids) and, put aside where they arrived, were queued after newer
 * sends of the same ids. CI preview at load 15-25, move-calledoff 'restart': `693 after
 * 694-697` on every id for the consumer, the listener and the history; forced here with set b's
 * watch 15 ms late: b1 refused k1:571..k1:572, stored k2:572..k3:574, then the refused ones
 * (`571 after 573,574` on every id). A restart during the move loads what waits aside in seq
 * order: the order must be in the seqs too.
 */

const QUEUE = 'jobs/v1';
const sent = (messageId: string) => ({ messageId, channel: `${QUEUE}/1`, data: { n: messageId }, created: Date.now() });
const handed = (messageId: string) => ({ message: { messageId, queue: QUEUE, id: '1', data: { n: messageId }, created: Date.now(), acceptedAt: Date.now(), from: 'p' }, records: [] });

/** keeps what is appended, and gives it back in seq order at a restart (as the log store does) */
class KeptStore extends MemoryStore {
  readonly kept: StoredMessage[] = [];
  override async append(messages: readonly StoredMessage[]): Promise<void> {
    this.kept.push(...messages);
  }
  override async load(): Promise<RecoveredState> {
    return { messages: [...this.kept].sort((a, b) => a.seq - b.seq).map((message) => ({ message, records: [] })), recent: [] };
  }
}

function broker(store: KeptStore, asideQueues: AsideQueue[], history?: History) {
  const lifecycle = new Lifecycle();
  const file = { load: () => asideQueues, save: (rows: readonly AsideQueue[]) => void asideQueues.splice(0, asideQueues.length, ...rows) } as unknown as AsideFile;
  const router = new Router({ policy: compilePolicy(brokerConfig({ defaultPolicy: 'allow', isMaster: true, maxItemsInQueue: 1_000_000 })), store, log: createLogger('silent'), now: Date.now, lifecycle, asideFile: file, history });
  // this broker is of set b; `view.owner` is the set its placement map names for the queue now
  const view = { owner: 'a' };
  const cluster = { set: 'b', owner: () => view.owner, moved: (set: string, queue: string) => new WhiskerError('E_MOVED', `Queue ${queue} is on set ${set}`, { set, queue, hosts: [] }) } as unknown as Cluster;
  return { router, intake: new Intake(router, lifecycle, cluster), view };
}

const queued = (router: Router) => [...(router.queues.get(QUEUE)?.heldMessages() ?? [])].map((m) => m.messageId);

describe('sends refused E_MOVED just before the queue came to this set, sent again (messages/moving.ts)', () => {
  test('the refused ones keep their place, before the newer sends put aside meanwhile, in the queue and in the seqs a restart loads', async () => {
    const store = new KeptStore();
    const asideQueues: AsideQueue[] = [];
    const { router, intake, view } = broker(store, asideQueues);
    // the client knows the queue moves here; this broker's map still names set a
    const refused = await intake.publish('p', [sent('m1'), sent('m2')]);
    expect(refused.map((r) => r.error?.code)).toEqual(['E_MOVED', 'E_MOVED']);
    // its watch catches up (cluster/move.ts #changed): frozen, new sends aside until the hand-over
    view.owner = 'b';
    router.moving.freeze(QUEUE, true);
    router.moving.holdAside(QUEUE);
    // the client's next sends were on their way: stored; then the refused ones come back
    await intake.publish('p', [sent('m3'), sent('m4')]);
    await intake.publish('p', [sent('m1'), sent('m2')]);
    await intake.publish('p', [sent('m5')]);

    // a restart before the hand-over (kill -9): what waits aside comes back in seq order
    const again = broker(store, asideQueues).router;
    await again.restore();

    for (const r of [router, again]) {
      await r.moving.importMoved(QUEUE, [handed('h1'), handed('h2')]);
      r.moving.releaseAside(QUEUE);
      expect(queued(r)).toEqual(['h1', 'h2', 'm1', 'm2', 'm3', 'm4', 'm5']);
    }
  });

  test("a retained queue: the history writes the refused ones in that place too, after the hand-over's records", async () => {
    const history = new History(tempDir('whisker-resend-'), () => ({ seconds: 3_600 }), createLogger('silent'), Date.now);
    await history.open();
    const { router, intake, view } = broker(new KeptStore(), [], history);
    expect((await intake.publish('p', [sent('m1')]))[0]!.error?.code).toBe('E_MOVED');
    view.owner = 'b';
    router.moving.freeze(QUEUE, true);
    router.moving.holdAside(QUEUE);
    await intake.publish('p', [sent('m2')]);
    await intake.publish('p', [sent('m1')]);
    // the hand-over as cluster/move.ts #take takes it: the old set's history first, then the messages
    const handOver = [handed('h1')];
    const ids = new Set(handOver.map((h) => h.message.messageId));
    await history.adopt(QUEUE, handOver.map(({ message: m }) => ({ messageId: m.messageId, id: m.id, acceptedAt: m.acceptedAt, created: m.created, from: m.from, data: m.data })), ids);
    await router.moving.importMoved(QUEUE, handOver);
    history.stored(ids);
    router.moving.releaseAside(QUEUE);
    expect(queued(router)).toEqual(['h1', 'm1', 'm2']);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await replayIds(history, QUEUE)).toEqual(['h1', 'm1', 'm2']);
    await history.close();
  });

  test("the old set, its map late for the call-off: the refused ones go after set b's hand-back, before the sends put aside meanwhile", async () => {
    const { router, intake, view } = broker(new KeptStore(), []);
    // the queue was on this set (b here) before the move; the move under way: frozen, sends E_MOVED
    view.owner = 'b';
    await intake.publish('p', [sent('old')]);
    router.moving.freeze(QUEUE, true);
    view.owner = 'a';
    expect((await intake.publish('p', [sent('m1')]))[0]!.error?.code).toBe('E_MOVED');
    // called off (cluster/move.ts #changed, phase return): the queue's sends wait aside here again
    view.owner = 'b';
    router.moving.holdAside(QUEUE);
    await intake.publish('p', [sent('m2')]);
    await intake.publish('p', [sent('m1')]);
    await router.moving.importMoved(QUEUE, [handed('h1')]);
    router.moving.releaseAside(QUEUE);
    expect(queued(router)).toEqual(['old', 'h1', 'm1', 'm2']);
  });
});
