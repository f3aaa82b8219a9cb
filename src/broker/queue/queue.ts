import { type DeliveryRecord, type Group, groupKey, type Subscriber } from './group.js';
import { QueueCore } from './core.js';
import type { RecoveredMessage, RecoveredRecord, StoredMessage, StoreEvent } from '../store/store.js';

export type { MessageSummary, QueueCounters, QueueEnvironment, QueueSettings } from './types.js';

/**
 * waiting messages a new group adopts per event-loop turn: a large backlog never stalls the loop
 * (each adoption is an assign event for the store too); a slice also ends after ADOPT_SLICE_MS,
 * checked every ADOPT_CHECK messages, on a slow or busy core
 */
const ADOPT_SLICE = 1_000;
const ADOPT_SLICE_MS = 4;
const ADOPT_CHECK = 100;

/**
 * One `endpoint/version` queue (SPEC §7): its waiting messages are rows (rows.ts) in acceptance
 * order (row-ring.ts); each group walks them with a cursor. A delivery record object exists only
 * while a message is in flight or requeued in a group (group.ts); bodies are a cache by row
 * (bodies.ts). One timer per queue, never one per message. Listings live in views.ts.
 *
 * Why this file is long: every verb that names a row's groups (accept, restore, adoption, a
 * move's import and the groups it names after a restart) keeps `unassigned` and the groups'
 * record counts and cursors together; the mechanics are in core.ts.
 */
export class Queue extends QueueCore {
  readonly #groupsOf = new Map<Subscriber, Set<Group>>();

  /** a held message (its body may be on disk only: `data` undefined) */
  message(messageId: string): StoredMessage | undefined {
    const row = this.own(messageId);
    return row < 0 ? undefined : this.stored(row);
  }

  /** a stored message enters the queue (a row, never changed): ready in every matching group, or it waits */
  accept(message: StoredMessage): void {
    if (this.rows.find(message.messageId) >= 0) return;
    this.counters.received++;
    // with `reject` the check came before storing; a stored message is never dropped for it
    if (this.depth >= this.settings.maxItems && this.settings.overflow === 'drop-oldest' && this.ownLimits) this.#dropOldest(message.id);
    // while older waiting messages are being adopted, a new one queues behind them (order per id)
    const groups = this.adoptAt !== null ? [] : this.matchingGroups(message.id);
    const row = this.addRow(message, groups);
    if (groups.length > 0) this.record([{ kind: 'assign', messageId: message.messageId, groups: groups.map((g) => g.key), slot: this.rows.storeSlot(row) }]);
    for (const group of groups) this.pump(group);
    // far from delivery (not handed out at once, the window full): its body stays on disk only
    if (this.rows.isRowOf(row, message.messageId) && this.ownsRow(row) && this.rows.inFlight(row) === 0) this.bodies.trim(row);
  }

  /** rebuilds state from the store on start, before any subscriber exists */
  restore(recovered: RecoveredMessage): void {
    const { message, records } = recovered;
    if (this.rows.find(message.messageId) >= 0) return;
    const groups = [...new Set(records.map((r) => r.group))].map((key) => this.groupFor(key)).filter((g): g is Group => g !== undefined);
    if (records.length > 0 && groups.length === 0) {
      // every record named a group this version cannot read: nothing can deliver it
      this.record([{ kind: 'remove', messageId: message.messageId }]);
      this.env.forgotten?.(message.messageId, message.acceptedAt);
      return;
    }
    const row = this.addRow(message, groups);
    this.bodies.trim(row);
    this.#requeued(row, records);
  }

  /**
   * After every message is restored: one that came back without records lost its assign record
   * to the crash (it was accepted while a group already matched it). The groups the other
   * records brought back take it, as `accept` would have; else it waits for a subscriber.
   */
  finishRestore(): void {
    const assigned: StoreEvent[] = [];
    for (let p = this.ring.next(0); p < this.ring.tail; p = this.ring.next(p + 1)) this.#adopt(p, assigned, new Set());
    if (assigned.length > 0) this.record(assigned);
  }

  subscribe(subscriber: Subscriber, pattern: string): void {
    const key = groupKey(subscriber.mode, subscriber.clientName, pattern);
    const isNew = !this.groups.has(key);
    const group = this.groupFor(key)!;
    group.addMember(subscriber);
    group.heldUntil = 0;
    let groups = this.#groupsOf.get(subscriber);
    if (!groups) this.#groupsOf.set(subscriber, (groups = new Set()));
    groups.add(group);
    if (isNew && this.unassigned > 0) {
      // from the first waiting message again: those passed over may match this group
      this.adoptAt = this.ring.head;
      this.adoptSome();
    }
    this.pump(group);
  }

  /**
   * In-flight deliveries to this subscriber through this pattern are requeued at once.
   * `holdMs`: the subscriber's connection was lost (not an unsubscribe): a group left without
   * members is kept that long even with no record, so what is accepted meanwhile gets a record
   * in it and reaches the client when it subscribes again (docs/protocol.md#groups, groupHold).
   */
  unsubscribe(subscriber: Subscriber, pattern: string, holdMs = 0): void {
    const group = this.groups.get(groupKey(subscriber.mode, subscriber.clientName, pattern));
    if (!group) return;
    group.removeMember(subscriber);
    if (holdMs > 0 && group.memberCount === 0) this.#holdGroup(group, holdMs);
    this.batched(() => {
      for (const record of [...this.inFlight]) {
        if (record.deliveredTo === subscriber && record.group === group) this.failDelivery(record, 0, 'unsubscribed');
      }
    });
    const groups = this.#groupsOf.get(subscriber);
    groups?.delete(group);
    if (!groups || groups.size === 0) {
      this.#groupsOf.delete(subscriber);
      this.inFlight.forget(subscriber);
    }
    this.dropGroupIfEmpty(group);
    this.pump(group);
  }

  /**
   * A group this broker had before a restart (messages/held-groups.ts), held as a lost
   * connection's is: what is accepted before its members subscribe again gets a record in it
   */
  holdGroup(key: string, holdMs: number): void {
    const group = this.groupFor(key);
    if (group && group.memberCount === 0) this.#holdGroup(group, holdMs);
  }

  /** keeps a group without members until `holdMs` from now (at the end it goes if still empty) */
  #holdGroup(group: Group, holdMs: number): void {
    const until = this.env.now() + holdMs;
    if (until <= group.heldUntil) return;
    group.heldUntil = until;
    setTimeout(() => {
      if (this.closed || group.heldUntil > this.env.now()) return;
      group.heldUntil = 0;
      this.dropGroupIfEmpty(group);
    }, holdMs + 10).unref();
  }

  /**
   * On the master to the delivery it answers, on a slave to the record it holds (acks go to every
   * broker, docs/protocol.md#ack); false when the queue does not hold the message (one find for
   * both: the router waits for its append then, `whenStored`)
   */
  ack(subscriber: Subscriber, messageId: string, via: string, ok: boolean, delaySeconds: number): boolean {
    const row = this.own(messageId);
    if (row < 0) return false;
    if (this.delivering) this.#ackDelivery(subscriber, row, via, ok, delaySeconds);
    else this.#ackReplayed(subscriber, row, via, ok, delaySeconds);
    return true;
  }

  /** master: an ack counts only from the connection the message was delivered to */
  #ackDelivery(subscriber: Subscriber, row: number, via: string, ok: boolean, delaySeconds: number): void {
    const record = this.#deliveryAt(subscriber, row, via);
    if (!record) return;
    this.#answer(record, ok, delaySeconds);
    this.resume(subscriber);
  }

  /**
   * slave: a client's answer to the master's delivery, applied to the record held here. In flight
   * here, this broker delivered it itself (it was master): only that delivery answers, after a
   * demotion too (docs/operations.md#automatic-failover)
   */
  #ackReplayed(subscriber: Subscriber, row: number, via: string, ok: boolean, delaySeconds: number): void {
    const key = groupKey(subscriber.mode, subscriber.clientName, via);
    if (!this.rows.groups(row).includes(key)) return;
    const record = this.recordOf(row, key) ?? this.materialize(row, this.groups.get(key)!);
    if (record.state === 'inflight' && record.deliveredTo !== subscriber) return;
    this.#answer(record, ok, delaySeconds);
  }

  /** master: a delivery in flight to this subscriber gets `requeueInterval` again, within `maxTouchSeconds` of its delivery */
  touch(subscriber: Subscriber, messageId: string, via: string): void {
    const record = this.delivering ? this.#deliveryTo(subscriber, messageId, via) : undefined;
    if (record) this.inFlight.touch(record, this.env.now(), this.settings.requeueIntervalMs, this.settings.maxTouchMs ?? 3_600_000);
  }

  #deliveryTo(subscriber: Subscriber, messageId: string, via: string): DeliveryRecord | undefined {
    const row = this.own(messageId);
    return row < 0 ? undefined : this.#deliveryAt(subscriber, row, via);
  }

  #deliveryAt(subscriber: Subscriber, row: number, via: string): DeliveryRecord | undefined {
    const record = this.recordOf(row, groupKey(subscriber.mode, subscriber.clientName, via));
    return record?.state === 'inflight' && record.deliveredTo === subscriber ? record : undefined;
  }

  #answer(record: DeliveryRecord, ok: boolean, delaySeconds: number): void {
    if (!ok) return this.failDelivery(record, delaySeconds * 1000, 'requeued by consumer');
    this.counters.acked++;
    this.settle(record.row, record.group.key, 'acked');
  }

  /** the master settled this record (docs/protocol.md#peers): a slave forgets it too */
  settleFromPeer(messageId: string, group: string): void {
    const row = this.own(messageId);
    if (row < 0 || !this.rows.groups(row).includes(group)) return;
    this.counters.acked++;
    this.settle(row, group, 'acked');
  }

  /** the master is done with the message in every group: so is this broker */
  forgetFromPeer(messageId: string): void {
    const row = this.own(messageId);
    if (row >= 0) this.drop(row, 'acked', true);
  }

  /** every message held, in acceptance order (offers to a master), made one at a time */
  *heldMessages(): IterableIterator<StoredMessage> {
    for (const row of this.ring) yield this.stored(row);
  }

  /**
   * A snapshot of what is held, read a part at a time (a sync to a mirror): the ring positions
   * from `start` (at first `ring.head`) to `end` (`ring.tail` when it began); rows settled since
   * are left out, rows added since are not reached. Up to `limit` pushed onto `into`; returns
   * where the next part starts.
   */
  heldPart(start: number, end: number, limit: number, into: StoredMessage[]): number {
    let p = this.ring.next(start);
    for (let n = 0; n < limit && p < end; p = this.ring.next(p + 1), n++) into.push(this.stored(this.ring.rowAt(p)));
    return Math.min(p, end);
  }

  /**
   * What a move hands over (SPEC §13, cluster/move.ts): every message held, in acceptance order,
   * with its unsettled records. A record in flight counts as a failed delivery (nbRequeues + 1):
   * the new set delivers it again (so the client does not take it for a copy it saw).
   */
  exportHeld(): Array<{ message: StoredMessage; records: RecoveredRecord[] }> {
    const held: Array<{ message: StoredMessage; records: RecoveredRecord[] }> = [];
    for (const row of this.ring) {
      const records = this.rows.groups(row).map((group) => {
        const r = this.recordOf(row, group);
        return { group, nbRequeues: (r?.nbRequeues ?? 0) + (r?.state === 'inflight' ? 1 : 0), notBefore: r?.state === 'delayed' ? r.notBefore : 0 };
      });
      held.push({ message: this.stored(row), records });
    }
    return held;
  }

  /**
   * A message a move handed over (SPEC §13): its records go to the groups it had on the old set
   * (made here if missing: a listener name that subscribes late still gets them), ahead of what
   * is accepted after; one that waited for a subscriber is taken as a new message.
   */
  importMessage(message: StoredMessage, records: readonly RecoveredRecord[]): void {
    if (records.length === 0) return this.accept(message);
    if (this.rows.find(message.messageId) >= 0) return;
    this.counters.received++;
    const groups = [...new Set(records.map((r) => r.group))].map((key) => this.groupFor(key)).filter((g): g is Group => g !== undefined);
    const row = this.addRow(message, groups);
    if (groups.length === 0) return;
    const events: StoreEvent[] = [{ kind: 'assign', messageId: message.messageId, groups: groups.map((g) => g.key) }];
    for (const r of this.#requeued(row, records)) events.push({ kind: 'requeue', messageId: message.messageId, group: r.group, nbRequeues: r.nbRequeues, notBefore: r.notBefore });
    this.record(events);
    for (const group of groups) this.pump(group);
    if (this.rows.isRowOf(row, message.messageId) && this.ownsRow(row) && this.rows.inFlight(row) === 0) this.bodies.trim(row);
  }

  /**
   * A move's hand-over taken (SPEC §13): each row held here already gets a record in every
   * group `groupsOf` names for it that it lacks (the hand-over's groups for a message it carries,
   * every matching group for one only sent here). They are sends this set stored during the move
   * and loaded at a restart: none was delivered here (the queue delivers nothing while it moves),
   * and one adopted by the first group to subscribe after the restart, or by none (the groups the
   * hand-over made adopt nothing), was lost for the others (test/attacks-31c move-b-down).
   */
  nameGroups(groupsOf: (messageId: string, id: string) => readonly string[]): void {
    const events: StoreEvent[] = [];
    const touched = new Set<Group>();
    for (let p = this.ring.next(this.ring.head); p < this.ring.tail; p = this.ring.next(p + 1)) {
      const row = this.ring.rowAt(p);
      if (this.rows.inFlight(row) > 0) continue;
      const named = this.rows.groups(row);
      const missing = groupsOf(this.rows.messageId(row), this.rows.id(row))
        .filter((key) => !named.includes(key))
        .map((key) => this.groupFor(key))
        .filter((g): g is Group => g !== undefined);
      if (missing.length === 0) continue;
      if (named.length === 0) this.unassigned--;
      this.rows.setGroups(row, [...named, ...missing.map((g) => g.key)]);
      for (const group of missing) {
        group.recordCount++;
        group.rewind(p);
        touched.add(group);
      }
      events.push({ kind: 'assign', messageId: this.rows.messageId(row), groups: missing.map((g) => g.key) });
    }
    if (events.length > 0) this.record(events);
    for (const group of touched) this.pump(group);
  }

  /** keys of the groups a message of `id` would go to if accepted now */
  matchingKeys(id: string): string[] {
    return this.matchingGroups(id).map((g) => g.key);
  }

  /** records given back requeued or delayed (a restart, a move) become record objects of the row; returns them */
  #requeued(row: number, records: readonly RecoveredRecord[]): RecoveredRecord[] {
    const now = this.env.now();
    const requeued: RecoveredRecord[] = [];
    for (const r of records) {
      const group = this.groups.get(r.group);
      if (!group || (r.nbRequeues === 0 && r.notBefore === 0) || this.recordOf(row, r.group)) continue;
      requeued.push(r);
      if (r.nbRequeues === 0 && r.notBefore <= now) continue;
      const record = this.materialize(row, group);
      record.nbRequeues = r.nbRequeues;
      record.notBefore = r.notBefore;
      if (r.notBefore > now) this.delay(record);
      else group.pushRetry(record);
    }
    return requeued;
  }

  /** a connection that can write again, or a subscriber whose flow limit rose: it may take more */
  resume(subscriber: Subscriber): void {
    for (const group of this.#groupsOf.get(subscriber) ?? []) this.pump(group);
  }

  /** empties the queue (or one id) without touching subscriptions (`whisker delete`) */
  purge(id?: string): number {
    const victims = [...this.ring].filter((row) => id === undefined || this.rows.id(row) === id);
    this.batched(() => {
      for (const row of victims) this.drop(row, 'dropped', true);
    });
    return victims.length;
  }

  /** drops one held message, in flight or not (a dead letter replayed or purged by the operator) */
  remove(messageId: string): boolean {
    const row = this.own(messageId);
    if (row >= 0) this.drop(row, 'dropped', true);
    return row >= 0;
  }

  close(): void {
    this.closed = true;
    this.timer.cancel();
  }

  // ---- adoption and overflow -------------------------------------------------------------

  /** a row waiting for a subscriber goes to the groups matching it now; false: none does */
  #adopt(position: number, events: StoreEvent[], touched: Set<Group>): boolean {
    const row = this.ring.rowAt(position);
    if (this.rows.groups(row).length !== 0) return false;
    const groups = this.matchingGroups(this.rows.id(row));
    if (groups.length === 0) return false;
    const keys = groups.map((g) => g.key);
    this.rows.setGroups(row, keys);
    this.unassigned--;
    for (const group of groups) {
      group.recordCount++;
      group.rewind(position);
      touched.add(group);
    }
    events.push({ kind: 'assign', messageId: this.rows.messageId(row), groups: keys, slot: this.rows.storeSlot(row) });
    return true;
  }

  /** New groups take the rows that waited for a subscriber of their ids, in acceptance order, a slice per turn. */
  protected adoptSome(): void {
    if (this.adoptAt === null || this.closed) return;
    const events: StoreEvent[] = [];
    const touched = new Set<Group>();
    const started = performance.now();
    let p = this.ring.next(this.adoptAt);
    for (let n = 0; n < ADOPT_SLICE && p < this.ring.tail; n++, p = this.ring.next(p + 1)) {
      if (n % ADOPT_CHECK === ADOPT_CHECK - 1 && performance.now() - started >= ADOPT_SLICE_MS) break;
      this.#adopt(p, events, touched);
    }
    this.adoptAt = p < this.ring.tail ? p : null;
    if (events.length > 0) this.record(events);
    if (this.adoptAt !== null) this.later();
    for (const group of touched) this.pump(group);
  }

  #dropOldest(id: string): void {
    let victim = this.idCounts().has(id) ? this.#firstWaiting(id) : -1;
    if (victim < 0) victim = this.#firstWaiting();
    if (victim < 0) return;
    this.counters.dropped++;
    this.drop(victim, 'dropped', false);
  }

  #firstWaiting(id?: string): number {
    for (const row of this.ring) if ((id === undefined || this.rows.id(row) === id) && this.rows.isWaiting(row)) return row;
    return -1;
  }
}
