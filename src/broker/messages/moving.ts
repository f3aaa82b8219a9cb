import type { History } from '../history/history.js';
import type { Queue } from '../queue/queue.js';
import { makeStoredMessage, type RecoveredRecord, type StoredMessage } from '../store/store.js';
import type { AsideFile, AsideQueue } from './aside-file.js';

/** what the router lends a move: its queues, its message index and its appends (it owns them) */
export interface MovingEnv {
  /** the queue of that name, made if needed */
  queue(name: string): Queue;
  existing(name: string): Queue | undefined;
  /** the queue delivers or not by the role, a step-down and whether it is frozen (the router decides); `frozen`: frozen now */
  deliveringChanged(name: string, frozen: boolean): void;
  /** a client's copy released from aside, unnamed: held as a slave holds its clients' copies (catch-up-hold.ts); false: queue it */
  holdCopy(message: StoredMessage): boolean;
  /** held by a queue now (the router's message index) */
  isHeld(messageId: string): boolean;
  /** held by a queue, or being stored: a hand-over's copy of it is not stored again */
  isHeldOrUnderWay(messageId: string): boolean;
  /** the store of this id under way (a master's feed, a client's copy) settles once it is queued or aside; undefined if none */
  storedSoon(messageId: string): Promise<void> | undefined;
  /** these ids were handed over, not settled: the dedupe window forgets them (a move back brings them again) */
  notSettled(messageIds: readonly string[]): void;
  /** the log and the history, both durable before it resolves */
  append(messages: readonly StoredMessage[]): Promise<void>;
  /** a message stored here from a hand-over: on a master, its mirrors learn it */
  made(message: StoredMessage): void;
  readBodies(messageIds: readonly string[]): Promise<unknown[]>;
  nextSeq(): number;
  /** `count` seqs set apart: returns the one before the first (the next `nextSeq` is past them) */
  reserveSeqs(count: number): number;
  readonly history: History | undefined;
  /** the queues waiting aside, durable (a cluster's broker only) */
  readonly file?: AsideFile | null;
}

/**
 * Why this file is long: the one owner of a move's state on a broker (frozen queues, what waits
 * aside and where it goes when released, the hand-over read out and put in), which these share.
 *
 * Queues moving from or to this broker's set (`whisker move`, SPEC §13, cluster/move.ts says
 * when): which deliver nothing whatever the role (frozen), the messages stored for a queue
 * being handed over to this set meanwhile (aside, queued after the hand-over), and the
 * hand-over itself read out of a queue (export) and put into one (import). The one owner of
 * that state; the router asks it whether a queue is frozen and where a message stored goes.
 */
export class Moving {
  readonly #env: MovingEnv;
  /** queues that deliver nothing here whatever the role: a move under way or done */
  readonly #frozen = new Set<string>();
  /** per queue being handed over to this set: messages stored meanwhile, queued after the hand-over */
  readonly #aside = new Map<string, StoredMessage[]>();
  /**
   * per message aside, its place in the release order: the order stored, or, for a client's copy
   * a slave's master named (its sync or feed, `named`), the place it named it, among the
   * messages it brought (stored aside after those it named before)
   */
  readonly #places = new Map<string, number>();
  #lastPlace = 0;
  /**
   * clients' copies aside (and a restart's, put aside again) the master has not named: released
   * on a slave catching up they wait for its sync as its other clients' copies do; queued at once,
   * a restarted slave gave a consumer newer sends before the older ones its sync brought next
   * (atk31h calloff-a-down A_FAILOVER run7: 1,279 order breaks, `seq 452 after 792`)
   */
  readonly #unnamed = new Set<string>();
  /**
   * per queue held aside: the seq before a range set apart for the hand-over, stored after what
   * waits aside yet queued before it. A queue is restored in seq order (store load) and a retry
   * goes before fresh messages of a higher seq: with seqs taken at import, set b restarted after
   * a move gave back the sends it took meanwhile before those handed over (atk31c Finding B:
   * 3,051 and 3,801 order breaks per id).
   */
  readonly #importSeqs = new Map<string, { next: number; end: number; before: number; resent: number }>();
  /**
   * ids of sends this broker answered E_MOVED, with their queue, oldest first (at most
   * REFUSED_MAX): one sent again once the queue waits aside here takes a seq set apart after the
   * hand-over's range (`resentSeq`), so it goes before the sends put aside meanwhile
   */
  readonly #refused = new Map<string, string>();
  /** queues the aside file held at start that no move under way has claimed yet (`unclaimed`) */
  readonly #restored = new Set<string>();

  constructor(env: MovingEnv) {
    this.#env = env;
  }

  /**
   * At start, before the store is loaded: the queues that waited aside when the broker stopped
   * wait aside again, frozen, with the seqs set apart then (aside-file.ts); what the store holds
   * of them put aside then goes aside again (`restoreAside`).
   */
  restoreQueues(): void {
    for (const { queue, before } of this.#env.file?.load() ?? []) {
      this.#aside.set(queue, []);
      this.#importSeqs.set(queue, { next: before + 1, end: before + MOVE_SEQS, before, resent: before + MOVE_SEQS + 1 });
      this.#restored.add(queue);
      this.#frozen.add(queue);
      this.#env.history?.holdMoving(queue);
    }
  }

  /**
   * A message the store held (in seq order), if its queue waits aside: aside
   * again if it was stored after the range set apart (put aside then), else false and the queue
   * takes it: what the queue held before the move (a call-off's old set) or a hand-over already
   * taken into the range (the next hand-over seq is past it).
   */
  restoreAside(message: StoredMessage): boolean {
    const range = this.#importSeqs.get(message.queue);
    if (!range) return false;
    if (message.seq <= range.end) {
      if (message.seq >= range.next) range.next = message.seq + 1;
      return false;
    }
    if (message.seq <= range.end + RESENT_SEQS && message.seq >= range.resent) range.resent = message.seq + 1;
    // a client's or its master's copy, not known now: its master's sync names it if it has it
    return this.putAside(message, true);
  }

  /** the last seq set apart at start (the router's next seq is past it) */
  reservedUpTo(): number {
    let end = 0;
    for (const range of this.#importSeqs.values()) end = Math.max(end, range.end + RESENT_SEQS);
    return end;
  }

  /** queues restored aside that no move under way claimed (cluster/move.ts settles them once the placements are read) */
  unclaimed(): string[] {
    return [...this.#restored];
  }

  isFrozen(queue: string): boolean {
    return this.#frozen.has(queue);
  }

  /** a queue moving away or to here delivers nothing, whatever the role */
  freeze(queue: string, frozen: boolean): void {
    if (frozen === this.#frozen.has(queue)) return;
    if (frozen) this.#frozen.add(queue);
    else this.#frozen.delete(queue);
    this.#env.deliveringChanged(queue, frozen);
  }

  /** from now on, messages stored for `queue` wait aside (not queued) until `releaseAside` */
  holdAside(queue: string): void {
    // a move under way takes up a queue restored aside
    this.#restored.delete(queue);
    if (!this.#aside.has(queue)) {
      this.#aside.set(queue, []);
      const before = this.#env.reserveSeqs(MOVE_SEQS + RESENT_SEQS);
      this.#importSeqs.set(queue, { next: before + 1, end: before + MOVE_SEQS, before, resent: before + MOVE_SEQS + 1 });
      // on disk before a send is put aside: a restart keeps them aside too
      this.#save();
    }
    // its history too waits: the old set's history is written before it (issue 31)
    this.#env.history?.holdMoving(queue);
  }

  isHeldAside(queue: string): boolean {
    return this.#aside.has(queue);
  }

  /** held aside (stored, not queued yet): a copy of it is not stored again */
  isAside(messageId: string): boolean {
    return this.#places.has(messageId);
  }

  /**
   * This broker answered these sends E_MOVED (intake.ts): its placement map named another set.
   * A map that lags the client's (the client heard of a move to this set, or of its call-off back
   * here, from another broker first) refuses the first sends and stores the next ones, already on
   * their way, once its etcd watch catches up; the refused ones come back a moment later, after
   * them. Remembered, they keep their place (`resentSeq`). Put aside where they arrived, they
   * were queued after newer sends of the same ids (CI preview, move-calledoff 'restart' at load
   * 15-25: `693 after 694-697` on every id, consumer, listener and history).
   */
  refused(messageId: string, queue: string): void {
    this.#refused.delete(messageId);
    this.#refused.set(messageId, queue);
    if (this.#refused.size > REFUSED_MAX) this.#refused.delete(this.#refused.keys().next().value!);
  }

  /**
   * The seq of a send this broker refused E_MOVED and now stores for `queue` waiting aside: one
   * of those set apart after the hand-over's range, below those of the sends put aside since (a
   * restart loads them in seq order, `restoreAside`), so it is released before them (`putAside`).
   * Undefined for any other send (it takes the next seq).
   */
  resentSeq(messageId: string, queue: string): number | undefined {
    const refusedFor = this.#refused.size === 0 ? undefined : this.#refused.get(messageId);
    if (refusedFor === undefined) return undefined;
    this.#refused.delete(messageId);
    const range = refusedFor === queue ? this.#importSeqs.get(queue) : undefined;
    if (!range || range.resent > range.end + RESENT_SEQS) return undefined;
    return range.resent++;
  }

  /** a message stored: false when its queue is not held aside (the router queues it). `fromClient`: a client's copy (not its master's) */
  putAside(message: StoredMessage, fromClient = false): boolean {
    const aside = this.#aside.get(message.queue);
    if (!aside) return false;
    const range = this.#importSeqs.get(message.queue);
    const last = aside[aside.length - 1];
    if (range && last && last.seq > message.seq && message.seq > range.end && message.seq <= range.end + RESENT_SEQS) {
      // a send refused E_MOVED, sent again (`resentSeq`): before those stored after it, in seq order
      const at = aside.findIndex((m) => m.seq > message.seq);
      const next = aside[at]!;
      aside.splice(at, 0, message);
      this.#places.set(message.messageId, (this.#places.get(next.messageId) ?? this.#lastPlace) - 0.5);
      // its history record, held for the move, too (written before the router puts it aside)
      this.#env.history?.placeMoving(message.queue, message.messageId, next.messageId);
    } else {
      aside.push(message);
      this.#places.set(message.messageId, ++this.#lastPlace);
    }
    if (fromClient) this.#unnamed.add(message.messageId);
    return true;
  }

  /**
   * This slave's master named a message (its sync or feed, catch-up-hold.ts): a client's copy of
   * it aside is no longer waited for; `here` (run after the messages it brought before it were
   * stored): released in this place, after them
   */
  named(messageId: string, here = false): void {
    if (!this.#places.has(messageId)) return;
    this.#unnamed.delete(messageId);
    if (here) this.#places.set(messageId, ++this.#lastPlace);
  }

  /** a client's copy aside that the master has not named yet */
  awaitsNaming(messageId: string): boolean {
    return this.#unnamed.has(messageId);
  }

  #forget(messageId: string): void {
    this.#places.delete(messageId);
    this.#unnamed.delete(messageId);
  }

  /**
   * The messages held aside enter their queue, in the order they were stored; those that are
   * copies of messages the old set settled (a move's hand-over of recent ids, `settled`) are
   * dropped at once instead: a re-send is not delivered twice.
   */
  releaseAside(queue: string, settled?: ReadonlySet<string>): number {
    return this.#release(queue, (message, into) => {
      into.accept(message);
      if (settled?.has(message.messageId)) into.remove(message.messageId);
    });
  }

  /**
   * A queue this broker kept aside across a restart whose move ended while it was down, and
   * that stays on this set (cluster/move.ts #settleRestored): this broker took no hand-over of
   * it, so on a slave still catching up its master's sync brings what the move queued before
   * what waited here (a call-off's hand-back). What its master named while it waited aside is
   * queued now, where it named it; the clients' copies it has not named (those loaded included)
   * wait in the catch-up hold for its sync, as its other clients' copies do (`holdCopy`). Queued
   * at once, a restarted slave, elected, gave a consumer newer sends before older ones (atk31h
   * calloff-a-down A_FAILOVER run7: 1,279 order breaks, `seq 452 after 792`). Not where this
   * broker takes the hand-over itself: that queues it first, and a master queues its own kept
   * copies without naming them to its followers (a restarted slave holding those waited for a
   * naming that never came, and, elected, delivered them after newer sends: 21, run10 here).
   */
  releaseRestored(queue: string): number {
    return this.#release(
      queue,
      (message, into, unnamed) => {
        if (!unnamed || !this.#env.holdCopy(message)) into.accept(message);
      },
      true,
    );
  }

  #release(queue: string, take: (message: StoredMessage, into: Queue, unnamed: boolean) => void, byPlace = false): number {
    const aside = this.#aside.get(queue);
    if (!aside) return 0;
    this.#aside.delete(queue);
    this.#importSeqs.delete(queue);
    this.#restored.delete(queue);
    this.#save();
    const into = this.#env.queue(queue);
    const places = this.#places;
    const ordered = byPlace ? aside.map((message, index) => ({ message, place: places.get(message.messageId) ?? index })).sort((a, b) => a.place - b.place).map(({ message }) => message) : aside;
    for (const message of ordered) {
      const unnamed = this.#unnamed.has(message.messageId);
      this.#forget(message.messageId);
      take(message, into, unnamed);
    }
    this.#env.history?.releaseMoving(queue);
    return aside.length;
  }

  /** the messages held aside for `queue`, bodies included, in the order stored (a move called off hands them back) */
  async #exportAside(queue: string): Promise<StoredMessage[]> {
    const aside = this.#aside.get(queue) ?? [];
    const lacking = aside.filter((m) => m.data === undefined);
    const bodies = lacking.length > 0 ? await this.#env.readBodies(lacking.map((m) => m.messageId)) : [];
    const byId = new Map(lacking.map((m, i) => [m.messageId, bodies[i]]));
    return aside.map((m) => (m.data === undefined ? { ...m, data: byId.get(m.messageId) } : m));
  }

  /**
   * What this set took of a queue moving here, for a call-off to hand back (bodies included, in
   * the order stored): what a restart during the move loaded into the queue (the queue delivers
   * nothing here while it moves, so it holds only sends taken meanwhile), then what waits aside.
   * Aside alone, a set b restarted during the call-off handed back nothing and dropped what it
   * had answered OK (test/attacks-31c calloff-b-down: 227 lost).
   */
  async exportTaken(queue: string): Promise<StoredMessage[]> {
    const loaded = (await this.exportQueue(queue)).map((h) => h.message);
    const aside = await this.#exportAside(queue);
    const seen = new Set<string>();
    return [...loaded, ...aside].filter((m) => !seen.has(m.messageId) && seen.add(m.messageId));
  }

  /** what `queue` holds, bodies included, in acceptance order, with its unsettled records (a move's hand-over) */
  async exportQueue(queue: string): Promise<Array<{ message: StoredMessage; records: RecoveredRecord[] }>> {
    const held = this.#env.existing(queue)?.exportHeld() ?? [];
    const lacking = held.filter((h) => h.message.data === undefined);
    const bodies = lacking.length > 0 ? await this.#env.readBodies(lacking.map((h) => h.message.messageId)) : [];
    const byId = new Map(lacking.map((h, i) => [h.message.messageId, bodies[i]]));
    return held.map(({ message, records }) => ({ message: message.data === undefined ? { ...message, data: byId.get(message.messageId) } : message, records }));
  }

  /**
   * A move's hand-over into this set: each message stored (unless held already), queued with
   * its records in the hand-over's order, before what waits aside. Returns how many were queued.
   */
  async importMoved(queueName: string, items: ReadonlyArray<{ message: Omit<StoredMessage, 'seq'>; records: readonly RecoveredRecord[] }>): Promise<number> {
    const env = this.#env;
    // a copy of one being stored now (a slave whose master's feed took the hand-back first):
    // taken once admitted, from aside, in the hand-over's order. Skipped as under way, it waited
    // aside behind the sends taken after the call-off (atk31h calloff-a-stop: 420 of 495 queued
    // after newer sends, `seq 587 after 703` for the consumer once the slave was elected)
    const storing = items.map(({ message }) => env.storedSoon(message.messageId)).filter((p): p is Promise<void> => p !== undefined);
    if (storing.length > 0) await Promise.all(storing);
    const aside = new Map((this.#aside.get(queueName) ?? []).map((m) => [m.messageId, m]));
    const taken = new Set<string>();
    const toStore: StoredMessage[] = [];
    const ordered: Array<{ message: StoredMessage; records: readonly RecoveredRecord[]; stored: boolean }> = [];
    for (const { message: m, records } of items) {
      if (m.queue !== queueName || taken.has(m.messageId)) continue;
      const held = aside.get(m.messageId);
      if (held) {
        taken.add(m.messageId);
        ordered.push({ message: held, records, stored: false });
        continue;
      }
      // held here already (a hand-over taken twice, a restart mid-move): not twice. The dedupe
      // window is not asked: this set settles nothing of the queue during the move (it delivers
      // nothing), so what it remembers of an id handed over is from an earlier stay of the queue
      // here, and the old set holding the id unsettled is what counts (issue 31: a queue moved
      // and at once moved back lost what it had handed over)
      if (env.isHeldOrUnderWay(m.messageId)) continue;
      const message = makeStoredMessage(this.#importSeq(queueName), m);
      taken.add(m.messageId);
      toStore.push(message);
      ordered.push({ message, records, stored: true });
    }
    if (toStore.length > 0) await env.append(toStore);
    const list = this.#aside.get(queueName);
    if (list) this.#aside.set(queueName, list.filter((m) => !taken.has(m.messageId)));
    const queue = env.queue(queueName);
    let count = 0;
    for (const { message, records, stored } of ordered) {
      this.#forget(message.messageId);
      if (env.isHeld(message.messageId)) continue;
      if (stored) env.made(message);
      queue.importMessage(message, records);
      count++;
    }
    return count;
  }

  #save(): void {
    this.#env.file?.save([...this.#importSeqs].map(([queue, { before }]): AsideQueue => ({ queue, before })));
  }

  /** a seq for a message handed over: from the range set apart when the queue was held aside, else the next one */
  #importSeq(queue: string): number {
    const range = this.#importSeqs.get(queue);
    if (!range || range.next > range.end) return this.#env.nextSeq();
    return range.next++;
  }

  /**
   * After a hand-over is queued here, what this broker held of the queue before it (sends it
   * stored during the move and loaded at a restart: its store kept them, not that they waited
   * aside) goes to the groups it would have gone to from aside: the hand-over's groups for a
   * message the hand-over carries, every matching group for the others.
   */
  nameHeld(queueName: string, items: ReadonlyArray<{ message: Omit<StoredMessage, 'seq'>; records: readonly RecoveredRecord[] }>): void {
    const queue = this.#env.existing(queueName);
    if (!queue) return;
    const handed = new Map(items.map(({ message, records }) => [message.messageId, records.map((r) => r.group)]));
    queue.nameGroups((messageId, id) => handed.get(messageId) ?? queue.matchingKeys(id));
  }

  /**
   * A queue moved away from this set: what it still holds here is the new set's now. Dropped
   * without counting as settled: a move of the queue back here hands the ids over again, and
   * they must be queued then, not taken for copies of messages settled here (issue 31).
   */
  dropMoved(queue: string): number {
    const existing = this.#env.existing(queue);
    if (!existing) return 0;
    const ids: string[] = [];
    existing.heldIds(ids);
    const dropped = existing.purge();
    this.#env.notSettled(ids);
    return dropped;
  }
}

/**
 * seqs set apart for a hand-over: more than a hand-over of limits.maxMoveBytes (64 MiB at most)
 * can hold; past it, the rest take seqs after what waits aside (their order after a restart)
 */
const MOVE_SEQS = 1 << 22;
/** seqs set apart after those, for sends refused E_MOVED and sent again (`resentSeq`); past them, the next seq */
const RESENT_SEQS = 1 << 16;
/** sends refused E_MOVED remembered at most (the oldest forgotten first) */
const REFUSED_MAX = 10_000;
