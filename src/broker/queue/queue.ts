import { WhiskerError } from '../../protocol/errors.js';
import { type Body, LOAD_RETRY_MS, QueueBodies } from './bodies.js';
import { type DeliveryRecord, Group, groupKey, parseGroupKey, type Subscriber } from './group.js';
import { InFlight } from './in-flight.js';
import { MinHeap } from './heap.js';
import { MessageRows } from './rows.js';
import { RowRing } from './row-ring.js';
import { QueueViews } from './views.js';
import type { QueueEnvironment, QueueSettings } from './types.js';
import { WakeTimer } from './wake-timer.js';
import type { RecoveredMessage, Settlement, StoredMessage, StoreEvent } from '../store/store.js';

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
 */
export class Queue extends QueueViews {
  #settings: QueueSettings;
  readonly #env: QueueEnvironment;
  #delivering = false;
  /** a slave that follows a master: its overflow and ttl are the master's settlements, not its own count */
  #followsMaster = false;
  /** rows that wait for a first subscriber (no group named) */
  #unassigned = 0;
  readonly #groupsOf = new Map<Subscriber, Set<Group>>();
  readonly #delayed = new MinHeap<{ record: DeliveryRecord; at: number }>((d) => d.at);
  /** ring position of the next row whose ttl is to come */
  #ttlAt = 0;
  #depth = 0;
  readonly #bodies: QueueBodies;
  /** a read failed: groups waiting for bodies are pumped again at this time (ms epoch) */
  #loadRetryAt = 0;
  /** ring position where adoption of waiting rows by new groups has got to; null: none under way */
  #adoptAt: number | null = null;
  #laterScheduled = false;
  /** groups to pump on the next turn (a cursor passed many rows of other groups) */
  readonly #pumpSoon = new Set<Group>();
  /** groups whose pump waits for the end of a batch of requeues (#batched); null: none under way */
  #deferred: Set<Group> | null = null;
  #closed = false;
  readonly #timer: WakeTimer;

  constructor(name: string, settings: QueueSettings, env: QueueEnvironment) {
    const rows = env.rows ?? new MessageRows();
    super(name, rows, new RowRing(rows), new InFlight());
    this.#settings = settings;
    this.#env = env;
    this.#bodies = new QueueBodies(
      {
        name,
        store: env.store,
        messageIdOf: (row) => (this.ownsRow(row) ? rows.messageId(row) : undefined),
        upcoming: (group, limit) => this.#upcoming(group, limit),
        seqOf: (row) => rows.seq(row),
        pump: (group) => this.#pump(group),
        lost: (row) => {
          this.counters.dropped++;
          this.#drop(row, 'dropped', false);
        },
        retryLater: () => {
          this.#loadRetryAt = env.now() + LOAD_RETRY_MS;
          this.#timer.armAt(this.#loadRetryAt);
        },
        warn: env.warn,
      },
      env.bodyWindow,
    );
    this.#timer = new WakeTimer(env.now, () => this.#batched(() => this.#wake()));
  }

  /** every state change goes to the store, then to the `recorded` hook (the mirrors' feed) */
  #record(events: StoreEvent[]): void {
    this.#env.store.record(events);
    this.#env.recorded?.(events);
  }

  get settings(): QueueSettings {
    return this.#settings;
  }

  /** messages not yet delivered to every group (waiting, requeued or delayed) */
  get depth(): number {
    return this.#depth;
  }

  /** waiting messages whose body is on disk only */
  get coldSize(): number {
    return this.ring.size - this.#bodies.held;
  }

  /** messages held whose body is in memory; the others are read back from the store */
  get bodiesInMemory(): number {
    return this.#bodies.held;
  }

  /** nothing held, nobody subscribed: the router may forget it (docs/configuration.md, idleQueueTimeout) */
  get isIdle(): boolean {
    return this.ring.size === 0 && this.groups.size === 0 && this.inFlight.size === 0 && this.#delayed.size === 0;
  }

  /** a held message (its body may be on disk only: `data` undefined) */
  message(messageId: string): StoredMessage | undefined {
    const row = this.own(messageId);
    return row < 0 ? undefined : this.#stored(row);
  }

  #stored(row: number, body: Body | undefined = this.#bodies.get(row)): StoredMessage {
    return this.rows.message(row, body?.data, body?.json);
  }

  updateSettings(settings: QueueSettings): void {
    const shift = settings.requeueIntervalMs - this.#settings.requeueIntervalMs;
    this.#settings = settings;
    if (shift !== 0 && this.inFlight.size > 0) {
      // deliveries in flight follow the new interval too, so the set stays in deadline order
      this.inFlight.shift(shift);
      this.#timer.armAt(this.inFlight.first()!.deadline);
    }
    this.#pumpAll();
  }

  /** only the master delivers (SPEC §9); a slave keeps the same state and stays silent */
  setDelivering(delivering: boolean): void {
    const own = this.#ownLimits;
    this.#delivering = delivering;
    this.#limitsOwnedSince(own);
    if (delivering) this.#pumpAll();
  }

  /**
   * A slave follows a master (its sync and feed): it then drops and expires only what the master
   * tells it it dropped or expired; by its own count it would drop the master's deliveries in
   * flight (test/broker/mirror/slave-overflow.test.ts). Without a master it keeps its own bounds.
   */
  setFollowsMaster(follows: boolean): void {
    const own = this.#ownLimits;
    this.#followsMaster = follows;
    this.#limitsOwnedSince(own);
  }

  /** the ttl it left to a master is its own again: what is due expires now */
  #limitsOwnedSince(ownBefore: boolean): void {
    if (!ownBefore && this.#ownLimits && this.#settings.ttlMs !== null) this.#timer.armAt(this.#env.now());
  }

  get #ownLimits(): boolean {
    return this.#delivering || !this.#followsMaster;
  }

  /** E_QUEUE_FULL when the queue is full and its overflow policy is `reject`; `pending`: accepted sends still being stored */
  checkCapacity(pending = 0): void {
    if (this.#settings.overflow === 'reject' && this.#depth + pending >= this.#settings.maxItems) {
      throw new WhiskerError('E_QUEUE_FULL', 'Queue is full');
    }
  }

  /** a stored message enters the queue (a row, never changed): ready in every matching group, or it waits */
  accept(message: StoredMessage): void {
    if (this.rows.find(message.messageId) >= 0) return;
    this.counters.received++;
    // with `reject` the check came before storing; a stored message is never dropped for it
    if (this.#depth >= this.#settings.maxItems && this.#settings.overflow === 'drop-oldest' && this.#ownLimits) this.#dropOldest(message.id);
    // while older waiting messages are being adopted, a new one queues behind them (order per id)
    const groups = this.#adoptAt !== null ? [] : this.#matchingGroups(message.id);
    const row = this.#addRow(message, groups);
    if (groups.length > 0) this.#record([{ kind: 'assign', messageId: message.messageId, groups: groups.map((g) => g.key) }]);
    for (const group of groups) this.#pump(group);
    // far from delivery (not handed out at once, the window full): its body stays on disk only
    if (this.ownsRow(row) && this.rows.messageId(row) === message.messageId && this.rows.inFlight(row) === 0) this.#bodies.trim(row);
  }

  #addRow(message: StoredMessage, groups: readonly Group[]): number {
    const row = this.rows.add(message, groups.map((g) => g.key));
    this.ring.push(row);
    this.idArrived(message.id);
    this.#depth++;
    if (groups.length === 0) this.#unassigned++;
    for (const group of groups) group.recordCount++;
    this.#bodies.added(row, message.data, message.json);
    const ttl = this.#settings.ttlMs;
    if (ttl !== null) this.#timer.armAt(message.acceptedAt + ttl);
    return row;
  }

  /** rebuilds state from the store on start, before any subscriber exists */
  restore(recovered: RecoveredMessage): void {
    const { message, records } = recovered;
    if (this.rows.find(message.messageId) >= 0) return;
    const groups = [...new Set(records.map((r) => r.group))].map((key) => this.#groupFor(key)).filter((g): g is Group => g !== undefined);
    if (records.length > 0 && groups.length === 0) {
      // every record named a group this version cannot read: nothing can deliver it
      this.#record([{ kind: 'remove', messageId: message.messageId }]);
      this.#env.forgotten?.(message.messageId, message.acceptedAt);
      return;
    }
    const row = this.#addRow(message, groups);
    this.#bodies.trim(row);
    const now = this.#env.now();
    for (const r of records) {
      const group = this.groups.get(r.group);
      if (!group || (r.nbRequeues === 0 && r.notBefore <= now) || this.recordOf(row, r.group)) continue;
      const record = this.#materialize(row, group);
      record.nbRequeues = r.nbRequeues;
      record.notBefore = r.notBefore;
      if (r.notBefore > now) this.#delay(record);
      else group.pushRetry(record);
    }
  }

  /**
   * After every message is restored: one that came back without records lost its assign record
   * to the crash (it was accepted while a group already matched it). The groups the other
   * records brought back take it, as `accept` would have; else it waits for a subscriber.
   */
  finishRestore(): void {
    const assigned: StoreEvent[] = [];
    for (let p = this.ring.next(0); p < this.ring.tail; p = this.ring.next(p + 1)) this.#adopt(p, assigned, new Set());
    if (assigned.length > 0) this.#record(assigned);
  }

  /** a row waiting for a subscriber goes to the groups matching it now; false: none does */
  #adopt(position: number, events: StoreEvent[], touched: Set<Group>): boolean {
    const row = this.ring.rowAt(position);
    if (this.rows.groups(row).length !== 0) return false;
    const groups = this.#matchingGroups(this.rows.id(row));
    if (groups.length === 0) return false;
    const keys = groups.map((g) => g.key);
    this.rows.setGroups(row, keys);
    this.#unassigned--;
    for (const group of groups) {
      group.recordCount++;
      group.rewind(position);
      touched.add(group);
    }
    events.push({ kind: 'assign', messageId: this.rows.messageId(row), groups: keys });
    return true;
  }

  subscribe(subscriber: Subscriber, pattern: string): void {
    const key = groupKey(subscriber.mode, subscriber.clientName, pattern);
    const isNew = !this.groups.has(key);
    const group = this.#groupFor(key)!;
    group.addMember(subscriber);
    let groups = this.#groupsOf.get(subscriber);
    if (!groups) this.#groupsOf.set(subscriber, (groups = new Set()));
    groups.add(group);
    if (isNew && this.#unassigned > 0) {
      // from the first waiting message again: those passed over may match this group
      this.#adoptAt = this.ring.head;
      this.#adoptSome();
    }
    this.#pump(group);
  }

  /** in-flight deliveries to this subscriber through this pattern are requeued at once */
  unsubscribe(subscriber: Subscriber, pattern: string): void {
    const group = this.groups.get(groupKey(subscriber.mode, subscriber.clientName, pattern));
    if (!group) return;
    group.removeMember(subscriber);
    this.#batched(() => {
      for (const record of [...this.inFlight]) {
        if (record.deliveredTo === subscriber && record.group === group) this.#failDelivery(record, 0, 'unsubscribed');
      }
    });
    const groups = this.#groupsOf.get(subscriber);
    groups?.delete(group);
    if (!groups || groups.size === 0) {
      this.#groupsOf.delete(subscriber);
      this.inFlight.forget(subscriber);
    }
    this.#dropGroupIfEmpty(group);
    this.#pump(group);
  }

  /** on the master to the delivery it answers, on a slave to the record it holds (acks go to every broker, docs/protocol.md#ack) */
  ack(subscriber: Subscriber, messageId: string, via: string, ok: boolean, delaySeconds: number): void {
    if (this.#delivering) this.ackDelivery(subscriber, messageId, via, ok, delaySeconds);
    else this.ackReplayed(subscriber, messageId, via, ok, delaySeconds);
  }

  /** master: an ack counts only from the connection the message was delivered to */
  ackDelivery(subscriber: Subscriber, messageId: string, via: string, ok: boolean, delaySeconds: number): void {
    const record = this.#deliveryTo(subscriber, messageId, via);
    if (!record) return;
    this.#answer(record, ok, delaySeconds);
    this.resume(subscriber);
  }

  /**
   * slave: a client's answer to the master's delivery, applied to the record held here. In flight
   * here, this broker delivered it itself (it was master): only that delivery answers, after a
   * demotion too (docs/operations.md#automatic-failover)
   */
  ackReplayed(subscriber: Subscriber, messageId: string, via: string, ok: boolean, delaySeconds: number): void {
    const row = this.own(messageId);
    const key = groupKey(subscriber.mode, subscriber.clientName, via);
    if (row < 0 || !this.rows.groups(row).includes(key)) return;
    const record = this.recordOf(row, key) ?? this.#materialize(row, this.groups.get(key)!);
    if (record.state === 'inflight' && record.deliveredTo !== subscriber) return;
    this.#answer(record, ok, delaySeconds);
  }

  /** master: a delivery in flight to this subscriber gets `requeueInterval` again, within `maxTouchSeconds` of its delivery */
  touch(subscriber: Subscriber, messageId: string, via: string): void {
    const record = this.#delivering ? this.#deliveryTo(subscriber, messageId, via) : undefined;
    if (record) this.inFlight.touch(record, this.#env.now(), this.#settings.requeueIntervalMs, this.#settings.maxTouchMs ?? 3_600_000);
  }

  #deliveryTo(subscriber: Subscriber, messageId: string, via: string): DeliveryRecord | undefined {
    const row = this.own(messageId);
    const record = row < 0 ? undefined : this.recordOf(row, groupKey(subscriber.mode, subscriber.clientName, via));
    return record?.state === 'inflight' && record.deliveredTo === subscriber ? record : undefined;
  }

  #answer(record: DeliveryRecord, ok: boolean, delaySeconds: number): void {
    if (!ok) return this.#failDelivery(record, delaySeconds * 1000, 'requeued by consumer');
    this.counters.acked++;
    this.#settle(record.row, record.group.key, 'acked');
  }

  /** the master settled this record (docs/protocol.md#peers): a slave forgets it too */
  settleFromPeer(messageId: string, group: string): void {
    const row = this.own(messageId);
    if (row < 0 || !this.rows.groups(row).includes(group)) return;
    this.counters.acked++;
    this.#settle(row, group, 'acked');
  }

  /** the master is done with the message in every group: so is this broker */
  forgetFromPeer(messageId: string): void {
    const row = this.own(messageId);
    if (row >= 0) this.#drop(row, 'acked', true);
  }

  /** every message held, in acceptance order (offers to a master), made one at a time */
  *heldMessages(): IterableIterator<StoredMessage> {
    for (const row of this.ring) yield this.#stored(row);
  }

  /** a connection that can write again, or a subscriber whose flow limit rose: it may take more */
  resume(subscriber: Subscriber): void {
    for (const group of this.#groupsOf.get(subscriber) ?? []) this.#pump(group);
  }

  /** empties the queue (or one id) without touching subscriptions (`whisker delete`) */
  purge(id?: string): number {
    const victims = [...this.ring].filter((row) => id === undefined || this.rows.id(row) === id);
    this.#batched(() => {
      for (const row of victims) this.#drop(row, 'dropped', true);
    });
    return victims.length;
  }

  /** drops one held message, in flight or not (a dead letter replayed or purged by the operator) */
  remove(messageId: string): boolean {
    const row = this.own(messageId);
    if (row >= 0) this.#drop(row, 'dropped', true);
    return row >= 0;
  }

  close(): void {
    this.#closed = true;
    this.#timer.cancel();
  }

  // ---- rows and records ------------------------------------------------------------------

  /** the record of a row ready for its first delivery becomes an object (a delivery, a requeue) */
  #materialize(row: number, group: Group): DeliveryRecord {
    const record: DeliveryRecord = { row, seq: this.rows.seq(row), group, state: 'ready', listed: false, nbRequeues: 0, notBefore: 0, deliveredTo: null, deadline: 0 };
    const records = this.records.get(row);
    if (records) records.push(record);
    else this.records.set(row, [record]);
    return record;
  }

  /** `depth` follows a change of the row: waiting before, waiting after */
  #changing(row: number, change: () => void): void {
    const before = this.rows.isWaiting(row);
    change();
    if (before !== this.rows.isWaiting(row)) this.#depth += before ? -1 : 1;
  }

  /** the message's record in one group is settled; the row goes with its last one */
  #settle(row: number, key: string, outcome: Settlement): void {
    const group = this.groups.get(key)!;
    const record = this.recordOf(row, key);
    const left = this.rows.groups(row).filter((k) => k !== key);
    this.#changing(row, () => {
      if (record) this.#dropRecord(record);
      if (left.length > 0) this.rows.setGroups(row, left);
    });
    group.recordCount--;
    this.#record([{ kind: 'settle', messageId: this.rows.messageId(row), group: key, outcome }]);
    this.#dropGroupIfEmpty(group);
    if (left.length === 0) this.#forget(row);
  }

  #dropRecord(record: DeliveryRecord): void {
    if (record.state === 'inflight') this.#endFlight(record);
    const wasListed = record.state === 'ready' && record.listed;
    record.state = 'settled';
    if (wasListed) record.group.unlisted();
    const records = this.records.get(record.row)!.filter((r) => r !== record);
    if (records.length > 0) this.records.set(record.row, records);
    else this.records.delete(record.row);
  }

  /** every record of the row settled with `outcome` (those in flight too, or left to finish); true when it still waited somewhere */
  #drop(row: number, outcome: Settlement, inFlightToo: boolean): boolean {
    const keys = this.rows.groups(row);
    if (keys.length === 0) {
      this.#forget(row);
      return true;
    }
    let waited = false;
    const freed: Group[] = [];
    for (const key of keys) {
      const record = this.recordOf(row, key);
      if (record?.state === 'inflight' && !inFlightToo) continue;
      if (record?.state === 'inflight') freed.push(record.group);
      this.#settle(row, key, outcome);
      waited = true;
    }
    // a delivery dropped in flight (remove, purge) freed its subscriber's prefetch: the group's
    // next messages go now, not at the next send or ack (differential test, seed 10)
    for (const group of freed) this.#pump(group);
    return waited;
  }

  #forget(row: number): void {
    if (this.rows.isWaiting(row)) this.#depth--;
    if (this.rows.groups(row).length === 0) this.#unassigned--;
    const messageId = this.rows.messageId(row);
    const acceptedAt = this.rows.acceptedAt(row);
    this.ring.remove(row);
    this.idLeft(this.rows.id(row));
    this.#bodies.forgotten(row);
    this.records.delete(row);
    this.rows.free(row);
    this.#env.forgotten?.(messageId, acceptedAt);
    this.#record([{ kind: 'remove', messageId }]);
  }

  #endFlight(record: DeliveryRecord): void {
    this.inFlight.remove(record);
    record.deliveredTo = null;
    this.rows.addInFlight(record.row, -1);
    this.#env.flightEnded?.();
  }

  /** a delivery that ended without an ack: requeue, or dead-letter past `requeueLimit` */
  #failDelivery(record: DeliveryRecord, delayMs: number, reason: string): void {
    const { row, group } = record;
    if (record.state === 'inflight') this.#changing(row, () => this.#endFlight(record));
    record.state = 'ready';
    const nbDeliveries = record.nbRequeues + 1;
    const now = this.#env.now();
    if (nbDeliveries >= this.#settings.requeueLimit) {
      const target = this.#settings.deadLetter;
      if (target) this.counters.deadLettered++;
      else this.counters.dropped++;
      this.#env.discard(target, this.#stored(row), group.key, nbDeliveries, reason);
      this.#settle(row, group.key, target ? 'dead-lettered' : 'dropped');
    } else if (this.#isExpired(row, now)) {
      this.counters.expired++;
      this.#settle(row, group.key, 'expired');
    } else {
      this.counters.requeued++;
      record.nbRequeues = nbDeliveries;
      record.notBefore = delayMs > 0 ? now + delayMs : 0;
      this.#record([{ kind: 'requeue', messageId: this.rows.messageId(row), group: group.key, nbRequeues: nbDeliveries, notBefore: record.notBefore }]);
      if (delayMs > 0) return this.#delay(record);
      group.pushRetry(record);
    }
    // the delivery freed its subscriber's prefetch: the group's next messages go now (differential test, seed 2)
    this.#pump(group);
  }

  #delay(record: DeliveryRecord): void {
    record.state = 'delayed';
    record.listed = false;
    this.#delayed.push({ record, at: record.notBefore });
    this.#timer.armAt(record.notBefore);
  }

  // ---- groups and delivery ---------------------------------------------------------------

  #matchingGroups(id: string): Group[] {
    const groups: Group[] = [];
    for (const group of this.groups.values()) if (group.matches(id)) groups.push(group);
    return groups;
  }

  #groupFor(key: string): Group | undefined {
    const existing = this.groups.get(key);
    if (existing) return existing;
    const parsed = parseGroupKey(key);
    if (!parsed) return undefined;
    const group = new Group(parsed.mode, parsed.clientName, parsed.pattern, this);
    this.groups.set(key, group);
    return group;
  }

  /** New groups take the rows that waited for a subscriber of their ids, in acceptance order, a slice per turn. */
  #adoptSome(): void {
    if (this.#adoptAt === null || this.#closed) return;
    const events: StoreEvent[] = [];
    const touched = new Set<Group>();
    const started = performance.now();
    let p = this.ring.next(this.#adoptAt);
    for (let n = 0; n < ADOPT_SLICE && p < this.ring.tail; n++, p = this.ring.next(p + 1)) {
      if (n % ADOPT_CHECK === ADOPT_CHECK - 1 && performance.now() - started >= ADOPT_SLICE_MS) break;
      this.#adopt(p, events, touched);
    }
    this.#adoptAt = p < this.ring.tail ? p : null;
    if (events.length > 0) this.#record(events);
    if (this.#adoptAt !== null) this.#later();
    for (const group of touched) this.#pump(group);
  }

  /** on the next turn: adoption goes on, groups whose cursor passed many rows look further */
  #later(): void {
    if (this.#laterScheduled) return;
    this.#laterScheduled = true;
    setImmediate(() => {
      this.#laterScheduled = false;
      const groups = [...this.#pumpSoon];
      this.#pumpSoon.clear();
      if (this.#closed) return;
      this.#adoptSome();
      for (const group of groups) this.#pump(group);
    });
  }

  #dropGroupIfEmpty(group: Group): void {
    if (group.memberCount > 0 || group.recordCount > 0 || this.groups.get(group.key) !== group) return;
    this.groups.delete(group.key);
  }

  #hasCapacity = (subscriber: Subscriber): boolean => {
    const held = this.inFlight.countOf(subscriber);
    return subscriber.isWritable() && held < subscriber.prefetch && held < (subscriber.limit ?? Infinity);
  };

  #pumpAll(): void {
    for (const group of this.groups.values()) this.#pump(group);
  }

  /**
   * Pumps asked for while `work` runs (requeues of one unsubscribe or one timer wake) happen
   * once at its end: the requeued records then go in order together (differential test, seed 1335)
   */
  #batched(work: () => void): void {
    if (this.#deferred) return work();
    const deferred = (this.#deferred = new Set());
    try {
      work();
    } finally {
      this.#deferred = null;
    }
    for (const group of deferred) this.#pump(group);
  }

  /** the rows of the group's next deliveries: its next retry or first delivery, then first deliveries */
  #upcoming(group: Group, limit: number): number[] {
    const retry = group.peekRetry();
    const fresh = group.upcomingFresh(limit);
    return retry && (fresh.length === 0 || retry.seq < this.rows.seq(fresh[0]!)) ? [retry.row, ...fresh] : fresh;
  }

  #pump(group: Group): void {
    if (this.#deferred) {
      this.#deferred.add(group);
      return;
    }
    if (!this.#delivering || group.memberCount === 0 || this.#env.isDraining?.()) return;
    for (;;) {
      const retry = group.peekRetry();
      const freshRow = group.peekFresh();
      if (freshRow === -2) {
        this.#pumpSoon.add(group);
        return this.#later();
      }
      const fresh = freshRow >= 0 && (!retry || this.rows.seq(freshRow) < retry.seq);
      if (!fresh && !retry) return;
      const row = fresh ? freshRow : retry!.row;
      const now = this.#env.now();
      if (this.#isExpired(row, now)) {
        this.counters.expired++;
        this.#settle(row, group.key, 'expired');
        continue;
      }
      const body = this.#bodies.get(row);
      if (!body) return this.#bodies.load(group);
      const member = group.pickMember(this.#hasCapacity);
      if (!member) return;
      if (fresh) group.takeFresh();
      else group.takeRetry();
      this.#deliver(fresh ? this.#materialize(row, group) : retry!, member, now, body);
      if (group.readAheadSeq !== 0 && this.rows.seq(row) >= group.readAheadSeq) this.#bodies.load(group);
    }
  }

  #deliver(record: DeliveryRecord, subscriber: Subscriber, now: number, body: Body): void {
    const { row, group } = record;
    this.#changing(row, () => this.rows.addInFlight(row, 1));
    record.state = 'inflight';
    record.listed = false;
    record.deliveredTo = subscriber;
    record.deadline = now + this.#settings.requeueIntervalMs;
    this.inFlight.add(record, subscriber);
    this.#timer.armAt(record.deadline);
    this.counters.delivered++;
    const messageId = this.rows.messageId(row);
    this.#record([{ kind: 'deliver', messageId, group: group.key, nbRequeues: record.nbRequeues }]);
    const delivery = { sub: 0, messageId, channel: `${this.name}/${this.rows.id(row)}`, data: body.data, created: this.rows.created(row), nbRequeues: record.nbRequeues, from: this.rows.from(row), via: group.pattern };
    subscriber.deliver(delivery, body.json);
  }

  // ---- time: ack timeouts, delayed requeues, ttl -------------------------------------------

  #isExpired(row: number, now: number): boolean {
    const ttl = this.#settings.ttlMs;
    return ttl !== null && this.rows.acceptedAt(row) + ttl <= now;
  }

  #wake(): void {
    const now = this.#env.now();
    let next = Infinity;
    for (const record of this.inFlight) {
      if (record.deadline > now) {
        next = Math.min(next, record.deadline);
        break;
      }
      this.counters.timedOut++;
      this.#failDelivery(record, 0, 'ack timeout');
    }
    while (this.#delayed.size > 0) {
      const { record, at } = this.#delayed.peek()!;
      if (record.state !== 'delayed' || record.notBefore !== at) {
        this.#delayed.pop();
        continue;
      }
      if (at > now) {
        next = Math.min(next, at);
        break;
      }
      this.#delayed.pop();
      record.group.pushRetry(record);
      this.#pump(record.group);
    }
    if (this.#loadRetryAt !== 0 && this.#loadRetryAt <= now) {
      this.#loadRetryAt = 0;
      this.#pumpAll();
    } else if (this.#loadRetryAt !== 0) {
      next = Math.min(next, this.#loadRetryAt);
    }
    // ttl passed: every record not in flight expires, in-flight ones finish (SPEC §7); a slave
    // that follows a master expires what the master expired (its feed), nothing more
    const ttl = this.#ownLimits ? this.#settings.ttlMs : null;
    for (let p = this.ring.next(this.#ttlAt); ttl !== null && p < this.ring.tail; p = this.ring.next(p + 1)) {
      const row = this.ring.rowAt(p);
      const at = this.rows.acceptedAt(row) + ttl;
      if (at > now) {
        next = Math.min(next, at);
        break;
      }
      this.#ttlAt = p + 1;
      if (this.#drop(row, 'expired', false)) this.counters.expired++;
    }
    if (next !== Infinity) this.#timer.armAt(next);
  }

  #dropOldest(id: string): void {
    let victim = this.idCounts().has(id) ? this.#firstWaiting(id) : -1;
    if (victim < 0) victim = this.#firstWaiting();
    if (victim < 0) return;
    this.counters.dropped++;
    this.#drop(victim, 'dropped', false);
  }

  #firstWaiting(id?: string): number {
    for (const row of this.ring) if ((id === undefined || this.rows.id(row) === id) && this.rows.isWaiting(row)) return row;
    return -1;
  }
}
