import { WhiskerError } from '../../protocol/errors.js';
import type { Delivery } from '../../protocol/frames.js';
import { type Body, LOAD_RETRY_MS, QueueBodies, TextBody, TextBodyDelivery } from './bodies.js';
import { type DeliveryRecord, Group, parseGroupKey, type Subscriber } from './group.js';
import { InFlight } from './in-flight.js';
import { MinHeap } from './heap.js';
import { MessageRows } from './rows.js';
import { RowRing } from './row-ring.js';
import { QueueViews } from './views.js';
import type { QueueEnvironment, QueueSettings } from './types.js';
import { deliveriesLeft, spendDelivery } from './turn-budget.js';
import { WakeTimer } from './wake-timer.js';
import type { Settlement, StoredMessage, StoreEvent } from '../store/store.js';

const NO_GROUPS: readonly string[] = [];

/**
 * The mechanics of one queue (queue.ts has its verbs): its rows' records change here (settle,
 * drop, requeue, deliver), its groups are pumped, and its one timer serves ack timeouts,
 * delayed requeues and ttl. Rows and records are described in rows.ts and group.ts.
 *
 * Why this file is long: every change to a record and the pump that follows it read and write
 * the same counters (depth, unassigned, in flight, delayed, the ttl cursor); one file keeps them
 * with one owner.
 */
export abstract class QueueCore extends QueueViews {
  #settings: QueueSettings;
  protected readonly env: QueueEnvironment;
  protected delivering = false;
  /** a slave that follows a master: its overflow and ttl are the master's settlements, not its own count */
  #followsMaster = false;
  /** rows that wait for a first subscriber (no group named) */
  protected unassigned = 0;
  readonly #delayed = new MinHeap<{ record: DeliveryRecord; at: number }>((d) => d.at);
  /** ring position of the next row whose ttl is to come */
  #ttlAt = 0;
  #depth = 0;
  protected readonly bodies: QueueBodies;
  /** a read failed: groups waiting for bodies are pumped again at this time (ms epoch) */
  #loadRetryAt = 0;
  /** ring position where adoption of waiting rows by new groups has got to; null: none under way */
  protected adoptAt: number | null = null;
  #laterScheduled = false;
  /** groups to pump on the next turn (a cursor passed many rows of other groups) */
  readonly #pumpSoon = new Set<Group>();
  /** groups whose pump waits for the end of a batch of requeues (#batched); null: none under way */
  #deferred: Set<Group> | null = null;
  protected closed = false;
  protected readonly timer: WakeTimer;
  /** adoption of waiting rows by new groups goes on (queue.ts), a slice per turn */
  protected abstract adoptSome(): void;

  constructor(name: string, settings: QueueSettings, env: QueueEnvironment) {
    const rows = env.rows ?? new MessageRows();
    super(name, rows, new RowRing(rows), new InFlight());
    this.#settings = settings;
    this.env = env;
    this.bodies = new QueueBodies(
      {
        name,
        store: env.store,
        messageIdOf: (row) => (this.ownsRow(row) ? rows.messageId(row) : undefined),
        upcoming: (group, limit) => this.#upcoming(group, limit),
        seqOf: (row) => rows.seq(row),
        pump: (group) => this.pump(group),
        lost: (row) => {
          this.counters.dropped++;
          this.drop(row, 'dropped', false);
        },
        retryLater: () => {
          this.#loadRetryAt = env.now() + LOAD_RETRY_MS;
          this.timer.armAt(this.#loadRetryAt);
        },
        warn: env.warn,
      },
      env.bodyWindow,
    );
    this.timer = new WakeTimer(env.now, () => this.batched(() => this.#wake()));
  }

  /** every state change goes to the store, then to the `recorded` hook (the mirrors' feed) */
  protected record(events: StoreEvent[]): void {
    this.env.store.record(events);
    this.env.recorded?.(events);
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
    return this.ring.size - this.bodies.held;
  }

  /** messages held whose body is in memory; the others are read back from the store */
  get bodiesInMemory(): number {
    return this.bodies.held;
  }

  /** nothing held, nobody subscribed: the router may forget it (docs/configuration.md, idleQueueTimeout) */
  get isIdle(): boolean {
    return this.ring.size === 0 && this.groups.size === 0 && this.inFlight.size === 0 && this.#delayed.size === 0;
  }

  protected stored(row: number, body: Body | undefined = this.bodies.get(row)): StoredMessage {
    return this.rows.message(row, body?.data, body?.json);
  }

  updateSettings(settings: QueueSettings): void {
    const shift = settings.requeueIntervalMs - this.#settings.requeueIntervalMs;
    this.#settings = settings;
    if (shift !== 0 && this.inFlight.size > 0) {
      // deliveries in flight follow the new interval too, so the set stays in deadline order
      this.inFlight.shift(shift);
      this.timer.armAt(this.inFlight.first()!.deadline);
    }
    this.#pumpAll();
  }

  /** only the master delivers (SPEC §9); a slave keeps the same state and stays silent */
  setDelivering(delivering: boolean): void {
    const own = this.ownLimits;
    this.delivering = delivering;
    this.#limitsOwnedSince(own);
    if (delivering) this.#pumpAll();
  }

  /**
   * A slave follows a master (its sync and feed): it then drops and expires only what the master
   * tells it it dropped or expired; by its own count it would drop the master's deliveries in
   * flight (test/broker/mirror/slave-overflow.test.ts). Without a master it keeps its own bounds.
   */
  setFollowsMaster(follows: boolean): void {
    const own = this.ownLimits;
    this.#followsMaster = follows;
    this.#limitsOwnedSince(own);
  }

  /** the ttl it left to a master is its own again: what is due expires now */
  #limitsOwnedSince(ownBefore: boolean): void {
    if (!ownBefore && this.ownLimits && this.#settings.ttlMs !== null) this.timer.armAt(this.env.now());
  }

  protected get ownLimits(): boolean {
    return this.delivering || !this.#followsMaster;
  }

  /** E_QUEUE_FULL when the queue is full and its overflow policy is `reject`; `pending`: accepted sends still being stored */
  checkCapacity(pending = 0): void {
    if (this.#settings.overflow === 'reject' && this.#depth + pending >= this.#settings.maxItems) {
      throw new WhiskerError('E_QUEUE_FULL', 'Queue is full');
    }
  }

  protected addRow(message: StoredMessage, groups: readonly Group[]): number {
    const row = this.rows.add(message, groups.map((g) => g.key));
    this.ring.push(row);
    this.idArrived(message.id);
    this.#depth++;
    if (groups.length === 0) this.unassigned++;
    for (const group of groups) group.recordCount++;
    this.bodies.added(row, message.data, message.json);
    const ttl = this.#settings.ttlMs;
    if (ttl !== null) this.timer.armAt(message.acceptedAt + ttl);
    return row;
  }

  /** the record of a row ready for its first delivery becomes an object (a delivery, a requeue) */
  protected materialize(row: number, group: Group): DeliveryRecord {
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
  protected settle(row: number, key: string, outcome: Settlement): void {
    const group = this.groups.get(key)!;
    const record = this.recordOf(row, key);
    const named = this.rows.groups(row);
    // a message's last group (a consumer's ack): no array made
    const left = named.length === 1 && named[0] === key ? NO_GROUPS : named.filter((k) => k !== key);
    // `depth` follows the row's change (#changing, without a closure per settlement)
    const waitedBefore = this.rows.isWaiting(row);
    if (record) this.#dropRecord(record);
    if (left.length > 0) this.rows.setGroups(row, left);
    if (waitedBefore !== this.rows.isWaiting(row)) this.#depth += waitedBefore ? -1 : 1;
    group.recordCount--;
    const messageId = this.rows.messageId(row);
    this.record([{ kind: 'settle', messageId, group: key, outcome, slot: this.rows.storeSlot(row) }]);
    this.dropGroupIfEmpty(group);
    if (left.length === 0) this.#forget(row, messageId);
  }

  #dropRecord(record: DeliveryRecord): void {
    if (record.state === 'inflight') this.#endFlight(record);
    const wasListed = record.state === 'ready' && record.listed;
    record.state = 'settled';
    if (wasListed) record.group.unlisted();
    const held = this.records.get(record.row)!;
    // the row's only record (a consumer's delivery): no array made
    const records = held.length === 1 && held[0] === record ? null : held.filter((r) => r !== record);
    if (records && records.length > 0) this.records.set(record.row, records);
    else this.records.delete(record.row);
  }

  /** every record of the row settled with `outcome` (those in flight too, or left to finish); true when it still waited somewhere */
  protected drop(row: number, outcome: Settlement, inFlightToo: boolean): boolean {
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
      this.settle(row, key, outcome);
      waited = true;
    }
    // a delivery dropped in flight (remove, purge) freed its subscriber's prefetch: the group's
    // next messages go now, not at the next send or ack (differential test, seed 10)
    for (const group of freed) this.pump(group);
    return waited;
  }

  /** `messageId`: the row's, when the caller made it already (a string made from the id map's bytes) */
  #forget(row: number, messageId = this.rows.messageId(row)): void {
    if (this.rows.isWaiting(row)) this.#depth--;
    if (this.rows.groups(row).length === 0) this.unassigned--;
    const acceptedAt = this.rows.acceptedAt(row);
    // before the row lets its slot go: then the store's index may be the only holder
    const slot = this.rows.storeSlot(row);
    this.ring.remove(row);
    this.idLeft(this.rows.id(row));
    this.bodies.forgotten(row);
    this.records.delete(row);
    this.rows.free(row);
    this.env.forgotten?.(messageId, acceptedAt);
    this.record([{ kind: 'remove', messageId, slot }]);
  }

  #endFlight(record: DeliveryRecord): void {
    this.inFlight.remove(record);
    record.deliveredTo = null;
    this.rows.addInFlight(record.row, -1);
    this.env.flightEnded?.();
  }

  /** a delivery that ended without an ack: requeue, or dead-letter past `requeueLimit` */
  protected failDelivery(record: DeliveryRecord, delayMs: number, reason: string): void {
    const { row, group } = record;
    if (record.state === 'inflight') this.#changing(row, () => this.#endFlight(record));
    record.state = 'ready';
    const nbDeliveries = record.nbRequeues + 1;
    const now = this.env.now();
    if (nbDeliveries >= this.#settings.requeueLimit) {
      const target = this.#settings.deadLetter;
      if (target) this.counters.deadLettered++;
      else this.counters.dropped++;
      this.env.discard(target, this.stored(row), group.key, nbDeliveries, reason);
      this.settle(row, group.key, target ? 'dead-lettered' : 'dropped');
    } else if (this.#isExpired(row, now)) {
      this.counters.expired++;
      this.settle(row, group.key, 'expired');
    } else {
      this.counters.requeued++;
      record.nbRequeues = nbDeliveries;
      record.notBefore = delayMs > 0 ? now + delayMs : 0;
      this.record([{ kind: 'requeue', messageId: this.rows.messageId(row), group: group.key, nbRequeues: nbDeliveries, notBefore: record.notBefore, slot: this.rows.storeSlot(row) }]);
      if (delayMs > 0) return this.delay(record);
      group.pushRetry(record);
    }
    // the delivery freed its subscriber's prefetch: the group's next messages go now (differential test, seed 2)
    this.pump(group);
  }

  protected delay(record: DeliveryRecord): void {
    record.state = 'delayed';
    record.listed = false;
    this.#delayed.push({ record, at: record.notBefore });
    this.timer.armAt(record.notBefore);
  }

  // ---- groups and delivery ---------------------------------------------------------------

  protected matchingGroups(id: string): Group[] {
    const groups: Group[] = [];
    for (const group of this.groups.values()) if (group.matches(id)) groups.push(group);
    return groups;
  }

  protected groupFor(key: string): Group | undefined {
    const existing = this.groups.get(key);
    if (existing) return existing;
    const parsed = parseGroupKey(key);
    if (!parsed) return undefined;
    const group = new Group(parsed.mode, parsed.clientName, parsed.pattern, this);
    this.groups.set(key, group);
    this.env.groupsChanged?.();
    return group;
  }

  /** on the next turn: adoption goes on, groups whose cursor passed many rows look further */
  protected later(): void {
    if (this.#laterScheduled) return;
    this.#laterScheduled = true;
    setImmediate(() => {
      this.#laterScheduled = false;
      const groups = [...this.#pumpSoon];
      this.#pumpSoon.clear();
      if (this.closed) return;
      this.adoptSome();
      for (const group of groups) this.pump(group);
    });
  }

  protected dropGroupIfEmpty(group: Group): void {
    if (group.memberCount > 0 || group.recordCount > 0 || this.groups.get(group.key) !== group) return;
    if (group.heldUntil > this.env.now()) return;
    this.groups.delete(group.key);
    this.env.groupsChanged?.();
  }

  #hasCapacity = (subscriber: Subscriber): boolean => {
    const held = this.inFlight.countOf(subscriber);
    return subscriber.isWritable() && held < subscriber.prefetch && held < (subscriber.limit ?? Infinity);
  };

  #pumpAll(): void {
    for (const group of this.groups.values()) this.pump(group);
  }

  /**
   * Pumps asked for while `work` runs (requeues of one unsubscribe or one timer wake) happen
   * once at its end: the requeued records then go in order together (differential test, seed 1335)
   */
  protected batched(work: () => void): void {
    if (this.#deferred) return work();
    const deferred = (this.#deferred = new Set());
    try {
      work();
    } finally {
      this.#deferred = null;
    }
    for (const group of deferred) this.pump(group);
  }

  /** the rows of the group's next deliveries: its next retry or first delivery, then first deliveries */
  #upcoming(group: Group, limit: number): number[] {
    const retry = group.peekRetry();
    const fresh = group.upcomingFresh(limit);
    return retry && (fresh.length === 0 || retry.seq < this.rows.seq(fresh[0]!)) ? [retry.row, ...fresh] : fresh;
  }

  protected pump(group: Group): void {
    if (this.#deferred) {
      this.#deferred.add(group);
      return;
    }
    if (!this.delivering || group.memberCount === 0 || this.env.isDraining?.()) return;
    for (;;) {
      const retry = group.peekRetry();
      const freshRow = group.peekFresh();
      if (freshRow === -2) {
        this.#pumpSoon.add(group);
        return this.later();
      }
      const fresh = freshRow >= 0 && (!retry || this.rows.seq(freshRow) < retry.seq);
      if (!fresh && !retry) return;
      const row = fresh ? freshRow : retry!.row;
      const now = this.env.now();
      if (this.#isExpired(row, now)) {
        this.counters.expired++;
        this.settle(row, group.key, 'expired');
        continue;
      }
      const body = this.bodies.get(row);
      if (!body) return this.bodies.load(group);
      if (!deliveriesLeft()) {
        // this turn's deliveries are made (turn-budget.ts): the group goes on next turn
        this.#pumpSoon.add(group);
        return this.later();
      }
      const member = group.pickMember(this.#hasCapacity);
      if (!member) return;
      spendDelivery();
      if (fresh) group.takeFresh();
      else group.takeRetry();
      this.#deliver(fresh ? this.materialize(row, group) : retry!, member, now, body);
      // still waiting in a group that lags (a stalled listener): past the window its body goes back to disk
      if (this.rows.isWaiting(row)) this.bodies.trim(row);
      if (group.readAheadSeq !== 0 && this.rows.seq(row) >= group.readAheadSeq) this.bodies.load(group);
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
    this.timer.armAt(record.deadline);
    this.counters.delivered++;
    const messageId = this.rows.messageId(row);
    this.record([{ kind: 'deliver', messageId, group: group.key, nbRequeues: record.nbRequeues, slot: this.rows.storeSlot(row) }]);
    const channel = `${this.name}/${this.rows.id(row)}`;
    // a body read back as text is parsed only if the subscriber reads `data` (the frame takes the text)
    const delivery: Delivery =
      body instanceof TextBody
        ? new TextBodyDelivery(messageId, channel, body, this.rows.created(row), record.nbRequeues, this.rows.from(row), group.pattern)
        : { sub: 0, messageId, channel, data: body.data, created: this.rows.created(row), nbRequeues: record.nbRequeues, from: this.rows.from(row), via: group.pattern };
    subscriber.deliver(delivery, body.json);
  }

  // ---- time: ack timeouts, delayed requeues, ttl -------------------------------------------

  #isExpired(row: number, now: number): boolean {
    const ttl = this.#settings.ttlMs;
    return ttl !== null && this.rows.acceptedAt(row) + ttl <= now;
  }

  #wake(): void {
    const now = this.env.now();
    let next = Infinity;
    for (const record of this.inFlight) {
      if (record.deadline > now) {
        next = Math.min(next, record.deadline);
        break;
      }
      this.counters.timedOut++;
      this.failDelivery(record, 0, 'ack timeout');
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
      this.pump(record.group);
    }
    if (this.#loadRetryAt !== 0 && this.#loadRetryAt <= now) {
      this.#loadRetryAt = 0;
      this.#pumpAll();
    } else if (this.#loadRetryAt !== 0) {
      next = Math.min(next, this.#loadRetryAt);
    }
    // ttl passed: every record not in flight expires, in-flight ones finish (SPEC §7); a slave
    // that follows a master expires what the master expired (its feed), nothing more
    const ttl = this.ownLimits ? this.#settings.ttlMs : null;
    for (let p = this.ring.next(this.#ttlAt); ttl !== null && p < this.ring.tail; p = this.ring.next(p + 1)) {
      const row = this.ring.rowAt(p);
      const at = this.rows.acceptedAt(row) + ttl;
      if (at > now) {
        next = Math.min(next, at);
        break;
      }
      this.#ttlAt = p + 1;
      if (this.drop(row, 'expired', false)) this.counters.expired++;
    }
    if (next !== Infinity) this.timer.armAt(next);
  }


}
