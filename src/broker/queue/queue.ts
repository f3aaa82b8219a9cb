import { unescapeId } from '../../protocol/channel.js';
import { WhiskerError } from '../../protocol/errors.js';
import type { SubscriptionMode } from '../../protocol/frames.js';
import { addRecordTo, type DeliveryRecord, type Entry, Group, groupKey, NO_RECORDS, parseGroupKey, recordOf, removeRecordFrom, type Subscriber } from './group.js';
import { BODY_WINDOW, LOAD_RETRY_MS, QueueBodies } from './bodies.js';
import { Backlog } from './backlog.js';
import { ColdTier } from './cold.js';
import { EntryList } from './entry-list.js';
import { InFlight } from './in-flight.js';
import { MinHeap } from './heap.js';
import type { MessageSummary, QueueCounters, QueueEnvironment, QueueSettings } from './types.js';
import { WakeTimer } from './wake-timer.js';
import type { RecoveredMessage, RecoveredRecord, Settlement, StoredMessage, StoreEvent } from '../store/store.js';

export type { MessageSummary, QueueCounters, QueueEnvironment, QueueSettings } from './types.js';

/**
 * waiting messages a new group adopts per event-loop turn: a large backlog never stalls the loop
 * (each adoption is an assign event for the store too: 5,000 a turn took 13 ms median in process);
 * a slice also ends after ADOPT_SLICE_MS, checked every ADOPT_CHECK messages, on a slow or busy core
 */
const ADOPT_SLICE = 1_000;
const ADOPT_SLICE_MS = 4;
const ADOPT_CHECK = 100;
/**
 * a group with fewer first deliveries listed than this promotes cold rows (cold.ts) into objects,
 * up to PROMOTE_SLICE at a time: more than the bodies' look-ahead, so reading them back stays ahead
 */
const PROMOTE_LOW = 2_000;
const PROMOTE_SLICE = 1_000;

/**
 * Why this file is long: a queue's waiting messages, deliveries in flight, requeues, ttl and
 * limits change together and have one owner (STYLE habit 1); the parts that stand alone are
 * beside it (group, in-flight, bodies, entry-list, heap, wake-timer).
 *
 * One `endpoint/version` queue (SPEC §7): waiting messages per id, recipient groups, in-flight
 * deliveries, requeues, ttl and limits. One timer per queue, never one per message.
 */
export class Queue {
  readonly name: string;
  #settings: QueueSettings;
  readonly #env: QueueEnvironment;
  #delivering = false;
  /** a slave that follows a master: its overflow and ttl are the master's settlements, not its own count */
  #followsMaster = false;

  /** message id -> entry, shared by every queue of the router (QueueEnvironment.index); cold rows are found by the Backlog */
  readonly #index: Map<string, Entry>;
  /** waiting messages past the window, kept as rows; null when the store cannot give bodies back */
  readonly #cold: ColdTier | null;
  readonly #backlog: Backlog;
  /** messages waiting as objects before new ones become cold rows */
  readonly #window: number;
  readonly #isHeld = (entry: Entry): boolean => this.#index.get(entry.message.messageId) === entry;
  /** this queue's entries in acceptance order */
  readonly #held = new EntryList(this.#isHeld);
  readonly #byId = new Map<string, EntryList>();
  readonly #unassigned = new EntryList((entry) => entry.unassigned);
  readonly #groups = new Map<string, Group>();
  readonly #inFlight = new InFlight();
  readonly #groupsOf = new Map<Subscriber, Set<Group>>();
  readonly #delayed = new MinHeap<{ record: DeliveryRecord; at: number }>((d) => d.at);
  #ttlOrder: Entry[] = [];
  #ttlHead = 0;
  #depth = 0;
  readonly #bodies: QueueBodies;
  /** a read failed: groups waiting for bodies are pumped again at this time (ms epoch) */
  #loadRetryAt = 0;
  /** where adoption of waiting messages by new groups has got to; null: none under way */
  #adoptCursor: (() => Entry | undefined) | null = null;
  /** adoption walks the cold rows after the objects: position of the next row; null: not there */
  #adoptColdAt: number | null = null;
  /** groups to pump on the next turn (a promotion slice found nothing for them yet) */
  readonly #pumpSoon = new Set<Group>();
  #adoptScheduled = false;
  /** groups whose pump waits for the end of a batch of requeues (#batched); null: none under way */
  #deferred: Set<Group> | null = null;
  #closed = false;
  readonly #timer: WakeTimer;
  readonly counters: QueueCounters = { received: 0, delivered: 0, acked: 0, requeued: 0, timedOut: 0, deadLettered: 0, dropped: 0, expired: 0 };

  constructor(name: string, settings: QueueSettings, env: QueueEnvironment) {
    this.name = name;
    this.#settings = settings;
    this.#env = env;
    this.#index = env.index ?? new Map();
    this.#backlog = env.backlog ?? new Backlog();
    this.#window = env.store.readsBodies ? (env.bodyWindow ?? BODY_WINDOW) : 0;
    this.#cold =
      this.#window === 0
        ? null
        : new ColdTier({
            name,
            backlog: this.#backlog,
            record: (events) => this.#record(events),
            group: (key) => this.#groups.get(key),
            forgotten: (messageId, acceptedAt) => this.#env.forgotten?.(messageId, acceptedAt),
            depthChanged: (delta) => {
              this.#depth += delta;
            },
          });
    this.#bodies = new QueueBodies(
      {
        name,
        store: env.store,
        isHeld: this.#isHeld,
        pump: (group) => this.#pump(group),
        lost: (entry) => this.#lose(entry),
        retryLater: () => {
          this.#loadRetryAt = env.now() + LOAD_RETRY_MS;
          this.#timer.armAt(this.#loadRetryAt);
        },
        warn: env.warn,
      },
      env.bodyWindow,
    );
    this.#timer = new WakeTimer(env.now, () => this.#wake());
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

  get inFlightCount(): number {
    return this.#inFlight.size;
  }

  get size(): number {
    return this.#held.size + (this.#cold?.size ?? 0);
  }

  /** waiting messages kept as compact rows, not objects (cold.ts) */
  get coldSize(): number {
    return this.#cold?.size ?? 0;
  }

  /** messages held whose body is in memory; the others are read back from the store */
  get bodiesInMemory(): number {
    return this.#bodies.held;
  }

  /** slots of the groups' ready lists: records waiting, and settled ones not let go of yet */
  get listedSlots(): number {
    let n = 0;
    for (const group of this.#groups.values()) n += group.listedSlots;
    return n;
  }

  /** nothing held, nobody subscribed: the router may forget it (docs/configuration.md, idleQueueTimeout) */
  get isIdle(): boolean {
    return this.#held.size === 0 && (this.#cold?.size ?? 0) === 0 && this.#groups.size === 0 && this.#inFlight.size === 0 && this.#delayed.size === 0;
  }

  has(messageId: string): boolean {
    return this.#own(messageId) !== undefined || this.#coldRow(messageId) >= 0;
  }

  /** a held message (its body may be on disk only: `data` undefined) */
  message(messageId: string): StoredMessage | undefined {
    const row = this.#coldRow(messageId);
    return row >= 0 ? this.#backlog.message(row) : this.#own(messageId)?.message;
  }

  /** the entry of a message this queue holds as objects (the index is shared by every queue) */
  #own(messageId: string): Entry | undefined {
    const entry = this.#index.get(messageId);
    return entry !== undefined && entry.message.queue === this.name ? entry : undefined;
  }

  /** the row of a message this queue keeps cold, -1 otherwise */
  #coldRow(messageId: string): number {
    return this.#cold === null ? -1 : this.#cold.rowOf(messageId);
  }

  /** new messages become cold rows while older ones are, or once the window of objects is full */
  #goesCold(): boolean {
    const cold = this.#cold;
    return cold !== null && (cold.size > 0 || this.#adoptColdAt !== null || this.#depth - cold.size >= this.#window);
  }

  updateSettings(settings: QueueSettings): void {
    const shift = settings.requeueIntervalMs - this.#settings.requeueIntervalMs;
    this.#settings = settings;
    if (shift !== 0 && this.#inFlight.size > 0) {
      // deliveries in flight follow the new interval too, so the set stays in deadline order
      // (#wake stops at the first one not due)
      this.#inFlight.shift(shift);
      this.#timer.armAt(this.#inFlight.first()!.deadline);
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
   * tells it it dropped or expired. It holds the master's deliveries in flight as waiting (it
   * delivers nothing), and by its own count would drop them while the master still holds them:
   * lost if it is promoted (SPEC §9, test/broker/mirror/slave-overflow.test.ts). Without a master
   * it keeps its own bounds, what the master it becomes applies to the same sends anyway.
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

  /** its own overflow and ttl apply: a master, or a slave that follows none */
  get #ownLimits(): boolean {
    return this.#delivering || !this.#followsMaster;
  }

  /** E_QUEUE_FULL when the queue is full and its overflow policy is `reject`; `pending`: accepted sends still being stored */
  checkCapacity(pending = 0): void {
    if (this.#settings.overflow === 'reject' && this.#depth + pending >= this.#settings.maxItems) {
      throw new WhiskerError('E_QUEUE_FULL', 'Queue is full');
    }
  }

  /** a stored message enters the queue: one record per matching group, or it waits */
  accept(message: StoredMessage): void {
    if (this.#index.has(message.messageId) || this.#backlog.find(message.messageId) >= 0) return;
    this.counters.received++;
    // with `reject` the check came before storing; a stored message is never dropped for it
    if (this.#depth >= this.#settings.maxItems && this.#settings.overflow === 'drop-oldest' && this.#ownLimits) this.#dropOldest(message.id);
    // while older waiting messages are being adopted, a new one queues behind them (order per id)
    const groups = this.#adoptCursor || this.#adoptColdAt !== null ? [] : this.#matchingGroups(message.id);
    if (this.#goesCold()) {
      const keys = groups.map((g) => g.key);
      this.#cold!.add(message, groups, keys);
      if (groups.length > 0) this.#record([{ kind: 'assign', messageId: message.messageId, groups: keys }]);
      this.#armTtlAt(message.acceptedAt);
      // which groups had nothing listed is read before any pump: the first one's pump promotes
      // the row into every group's list, and the others were then never pumped (a consumer of
      // a second group waited for the next send or ack; differential test, seed 2)
      const idle = groups.filter((group) => group.freshListed === 0);
      for (const group of idle) this.#pump(group);
      return;
    }
    const entry = this.#addEntry(message);
    if (groups.length === 0) {
      this.#markUnassigned(entry);
    } else {
      for (const group of groups) this.#addRecord(entry, group, 0, 0);
      this.#record([{ kind: 'assign', messageId: message.messageId, groups: groups.map((g) => g.key) }]);
      for (const group of groups) this.#pump(group);
    }
    this.#armTtl(entry);
    // far from delivery (not handed out at once, the window full): its body stays on disk only;
    // not while it is in flight to a group, whose redelivery would read it back (and wait for it)
    if ((entry.pending > 0 || entry.unassigned) && !entry.records.some((r) => r.state === 'inflight')) this.#bodies.accepted(entry);
  }

  /** rebuilds state from the store on start, before any subscriber exists */
  restore(recovered: RecoveredMessage): void {
    const { message, records } = recovered;
    if (this.#index.has(message.messageId) || this.#backlog.find(message.messageId) >= 0) return;
    if (this.#goesCold() && records.every((r) => r.nbRequeues === 0 && r.notBefore === 0)) return this.#restoreCold(message, records.map((r) => r.group));
    // held as objects (a requeued record), it may not be newer than cold rows: every list of
    // objects (groups' first deliveries, acceptance order, ttl, drop-oldest) takes objects as older
    // than rows. The rows before it are held as objects first, in order (differential test,
    // seeds 2, 3, 9, 28: out of order deliveries, the newer dropped, a ttl missed after a restart)
    for (let taken = this.#cold?.takeFirst() ?? null; taken; taken = this.#cold!.takeFirst()) this.#hold(taken.message, taken.groups);
    const entry = this.#addEntry(message);
    if (records.length === 0) this.#markUnassigned(entry);
    for (const r of records) {
      const group = this.#groupFor(r.group);
      if (group) this.#addRecord(entry, group, r.nbRequeues, r.notBefore);
    }
    if (entry.records.length === 0 && !entry.unassigned) {
      // every record named a group this version cannot read: nothing can deliver it
      this.#forget(entry);
      this.#record([{ kind: 'remove', messageId: message.messageId }]);
    } else {
      this.#armTtl(entry);
    }
  }

  /**
   * After every message is restored: one that came back without records lost its assign record
   * to the crash (it was accepted while a group already matched it). The groups the other
   * records brought back take it, as `accept` would have; else it waits for a subscriber.
   */
  finishRestore(): void {
    const assigned: StoreEvent[] = [];
    for (const row of this.#cold?.rows() ?? []) {
      if (!this.#cold!.isUnassigned(row)) continue;
      const groups = this.#matchingGroups(this.#backlog.id(row));
      if (groups.length === 0) continue;
      const keys = groups.map((g) => g.key);
      this.#cold!.assign(row, groups, keys);
      assigned.push({ kind: 'assign', messageId: this.#backlog.messageId(row), groups: keys });
    }
    for (const entry of [...this.#unassigned]) {
      const groups = this.#matchingGroups(entry.message.id);
      if (groups.length === 0) continue;
      this.#unmarkUnassigned(entry);
      for (const group of groups) this.#addRecord(entry, group, 0, 0);
      assigned.push({ kind: 'assign', messageId: entry.message.messageId, groups: groups.map((g) => g.key) });
    }
    if (assigned.length > 0) this.#record(assigned);
  }

  subscribe(subscriber: Subscriber, pattern: string): void {
    const key = groupKey(subscriber.mode, subscriber.clientName, pattern);
    let group = this.#groups.get(key);
    const isNew = !group;
    if (!group) {
      group = new Group(subscriber.mode, subscriber.clientName, pattern);
      this.#groups.set(key, group);
    }
    group.addMember(subscriber);
    let groups = this.#groupsOf.get(subscriber);
    if (!groups) this.#groupsOf.set(subscriber, (groups = new Set()));
    groups.add(group);
    if (isNew && (this.#unassigned.size > 0 || (this.#cold?.size ?? 0) > 0)) {
      // from the first waiting message again: those passed over may match this group
      this.#adoptCursor = this.#unassigned.cursor();
      this.#adoptColdAt = null;
      this.#adoptSome();
    }
    this.#pump(group);
  }

  /** in-flight deliveries to this subscriber through this pattern are requeued at once */
  unsubscribe(subscriber: Subscriber, pattern: string): void {
    const key = groupKey(subscriber.mode, subscriber.clientName, pattern);
    const group = this.#groups.get(key);
    if (!group) return;
    group.removeMember(subscriber);
    this.#batched(() => {
      for (const record of [...this.#inFlight]) {
        if (record.deliveredTo === subscriber && record.group === group) this.#failDelivery(record, 0, 'unsubscribed');
      }
    });
    const groups = this.#groupsOf.get(subscriber);
    groups?.delete(group);
    if (!groups || groups.size === 0) {
      this.#groupsOf.delete(subscriber);
      this.#inFlight.forget(subscriber);
    }
    this.#dropGroupIfEmpty(group);
    this.#pump(group);
  }

  /**
   * Where an ack or nack goes: on the master to the delivery it answers, on a slave to the record
   * it holds of the master's delivery (acks go to every broker, docs/protocol.md#ack).
   */
  ack(subscriber: Subscriber, messageId: string, via: string, ok: boolean, delaySeconds: number): void {
    if (this.#delivering) this.ackDelivery(subscriber, messageId, via, ok, delaySeconds);
    else this.ackReplayed(subscriber, messageId, via, ok, delaySeconds);
  }

  /** master: an ack counts only from the connection the message was delivered to */
  ackDelivery(subscriber: Subscriber, messageId: string, via: string, ok: boolean, delaySeconds: number): void {
    const record = this.#recordFor(subscriber, messageId, via);
    if (!record || record.state !== 'inflight' || record.deliveredTo !== subscriber) return;
    this.#answer(record, ok, delaySeconds);
    this.resume(subscriber);
  }

  /** slave: a client's answer to the master's delivery, applied to the record held here */
  ackReplayed(subscriber: Subscriber, messageId: string, via: string, ok: boolean, delaySeconds: number): void {
    const row = this.#coldRow(messageId);
    if (row >= 0) {
      const key = groupKey(subscriber.mode, subscriber.clientName, via);
      if (ok) return this.#settleCold(row, key);
      // a requeue is a record of its own: the rows before it and it are held as objects first
      if (!this.#backlog.groups(row).includes(key)) return;
      this.#promoteThrough(row);
    }
    const record = this.#recordFor(subscriber, messageId, via);
    // in flight here: this broker delivered it itself (it was master), only that delivery
    // answers; it still does after a demotion (an elected master fenced for a moment must not
    // hold its consumers' prefetch until requeueInterval, docs/operations.md#automatic-failover)
    if (!record || (record.state === 'inflight' && record.deliveredTo !== subscriber)) return;
    this.#answer(record, ok, delaySeconds);
  }

  /**
   * master: a delivery in flight to this subscriber gets `requeueInterval` again from now, while
   * that stays within `maxTouchSeconds` of its delivery; anything else is ignored
   */
  touch(subscriber: Subscriber, messageId: string, via: string): void {
    if (!this.#delivering) return;
    const record = this.#recordFor(subscriber, messageId, via);
    if (!record || record.state !== 'inflight' || record.deliveredTo !== subscriber) return;
    this.#inFlight.touch(record, this.#env.now(), this.#settings.requeueIntervalMs, this.#settings.maxTouchMs ?? 3_600_000);
  }

  #recordFor(subscriber: Subscriber, messageId: string, via: string): DeliveryRecord | undefined {
    const entry = this.#own(messageId);
    const record = entry && recordOf(entry, groupKey(subscriber.mode, subscriber.clientName, via));
    return record && record.state !== 'settled' ? record : undefined;
  }

  #answer(record: DeliveryRecord, ok: boolean, delaySeconds: number): void {
    if (ok) {
      this.counters.acked++;
      this.#settle(record, 'acked');
    } else {
      this.#failDelivery(record, delaySeconds * 1000, 'requeued by consumer');
    }
  }

  /** the master settled this record (docs/protocol.md#peers): a slave forgets it too */
  settleFromPeer(messageId: string, group: string): void {
    const row = this.#coldRow(messageId);
    if (row >= 0) return this.#settleCold(row, group);
    const entry = this.#own(messageId);
    const record = entry && recordOf(entry, group);
    if (!record || record.state === 'settled') return;
    this.counters.acked++;
    this.#settle(record, 'acked');
  }

  /** the master is done with the message in every group: so is this broker */
  forgetFromPeer(messageId: string): void {
    const row = this.#coldRow(messageId);
    if (row >= 0) return this.#dropCold(row, 'acked');
    const entry = this.#own(messageId);
    if (entry) this.#drop(entry, 'acked', true);
  }

  /** the ids of every message held, in acceptance order, pushed onto `into` (a sync to a mirror: no object per row) */
  heldIds(into: string[]): void {
    for (const entry of this.#held) into.push(entry.message.messageId);
    for (const row of this.#cold?.rows() ?? []) into.push(this.#backlog.messageId(row));
  }

  /** every message held, in acceptance order (offers to a master) */
  heldMessages(): IterableIterator<StoredMessage> {
    return (function* (entries: EntryList, cold: ColdTier | null, backlog: Backlog) {
      for (const entry of entries) yield entry.message;
      for (const row of cold?.rows() ?? []) yield backlog.message(row);
    })(this.#held, this.#cold, this.#backlog);
  }

  /**
   * What a move hands over (SPEC §13, cluster/move.ts): every message held, in acceptance order,
   * with its unsettled records. A record in flight counts as a failed delivery (nbRequeues + 1):
   * the new set delivers it again (so the client does not take it for a copy it saw).
   */
  exportHeld(): Array<{ message: StoredMessage; records: RecoveredRecord[] }> {
    const held: Array<{ message: StoredMessage; records: RecoveredRecord[] }> = [];
    for (const entry of this.#held) {
      const records: RecoveredRecord[] = [];
      for (const r of entry.records) {
        if (r.state === 'settled') continue;
        records.push({ group: r.group.key, nbRequeues: r.nbRequeues + (r.state === 'inflight' ? 1 : 0), notBefore: r.state === 'delayed' ? r.notBefore : 0 });
      }
      if (records.length === 0 && !entry.unassigned) continue;
      held.push({ message: entry.message, records });
    }
    for (const row of this.#cold?.rows() ?? []) held.push({ message: this.#backlog.message(row), records: this.#backlog.groups(row).map((group) => ({ group, nbRequeues: 0, notBefore: 0 })) });
    return held;
  }

  /**
   * A message a move handed over (SPEC §13): its records go to the groups it had on the old set
   * (made here if missing: a listener name that subscribes late still gets them), ahead of what
   * is accepted after; one that waited for a subscriber is taken as a new message.
   */
  importMessage(message: StoredMessage, records: readonly RecoveredRecord[]): void {
    if (records.length === 0) return this.accept(message);
    if (this.#index.has(message.messageId) || this.#backlog.find(message.messageId) >= 0) return;
    // held as objects: never newer than cold rows (as in restore)
    for (let taken = this.#cold?.takeFirst() ?? null; taken; taken = this.#cold!.takeFirst()) this.#hold(taken.message, taken.groups);
    this.counters.received++;
    const entry = this.#addEntry(message);
    const groups: Group[] = [];
    const events: StoreEvent[] = [];
    for (const r of records) {
      const group = this.#groupFor(r.group);
      if (!group || groups.includes(group)) continue;
      this.#addRecord(entry, group, r.nbRequeues, r.notBefore);
      groups.push(group);
      if (r.nbRequeues > 0 || r.notBefore > 0) events.push({ kind: 'requeue', messageId: message.messageId, group: group.key, nbRequeues: r.nbRequeues, notBefore: r.notBefore });
    }
    if (groups.length === 0) {
      this.#markUnassigned(entry);
    } else {
      this.#record([{ kind: 'assign', messageId: message.messageId, groups: groups.map((g) => g.key) }, ...events]);
      for (const group of groups) this.#pump(group);
    }
    this.#armTtl(entry);
  }

  /** a connection that can write again, or a subscriber whose flow limit rose: it may take more */
  resume(subscriber: Subscriber): void {
    for (const group of this.#groupsOf.get(subscriber) ?? []) this.#pump(group);
  }

  /** empties the queue (or one id) without touching subscriptions (`whisker delete`) */
  purge(id?: string): number {
    // no group delivers before the end: a pump would promote rows not listed yet, and they would stay
    let count = 0;
    this.#batched(() => {
      const victims = id === undefined ? [...this.#held] : [...(this.#byId.get(id) ?? [])];
      for (const entry of victims) this.#drop(entry, 'dropped', true);
      const rows = this.#cold === null ? [] : id === undefined ? [...this.#cold.rows()] : [...this.#cold.rowsOf(id)];
      for (const row of rows) this.#dropCold(row, 'dropped');
      count = victims.length + rows.length;
    });
    return count;
  }

  /** drops one held message, in flight or not (a dead letter replayed or purged by the operator) */
  remove(messageId: string): boolean {
    const row = this.#coldRow(messageId);
    if (row >= 0) {
      this.#dropCold(row, 'dropped');
      return true;
    }
    const entry = this.#own(messageId);
    if (!entry) return false;
    this.#drop(entry, 'dropped', true);
    return true;
  }

  /** ids in their canonical escaped form, as in channel strings (`whisker list`) */
  idCounts(): Map<string, number> {
    const ids = new Map<string, number>();
    for (const [id, entries] of this.#byId) ids.set(id, entries.size);
    for (const [id, count] of this.#cold?.idCounts() ?? []) ids.set(id, (ids.get(id) ?? 0) + count);
    return ids;
  }

  /** what `whisker list -m` shows of the messages held, oldest first: never their bodies */
  messages(id?: string, limit = Infinity): MessageSummary[] {
    const entries = id === undefined ? this.#held[Symbol.iterator]() : (this.#byId.get(id) ?? [])[Symbol.iterator]();
    const summaries: MessageSummary[] = [];
    for (const { message, records, unassigned } of entries) {
      if (summaries.length >= limit) break;
      const groups = records.map((r) => ({ group: r.group.key, state: r.state, nbRequeues: r.nbRequeues }));
      summaries.push({ messageId: message.messageId, id: message.id, created: message.created, acceptedAt: message.acceptedAt, from: message.from, waitingForSubscriber: unassigned, groups });
    }
    const rows = this.#cold === null ? [] : id === undefined ? this.#cold.rows() : this.#cold.rowsOf(id);
    for (const row of rows) {
      if (summaries.length >= limit) break;
      const { message, groups } = this.#cold!.summary(row);
      const waiting = groups.map((group) => ({ group, state: 'ready', nbRequeues: 0 }));
      summaries.push({ messageId: message.messageId, id: message.id, created: message.created, acceptedAt: message.acceptedAt, from: message.from, waitingForSubscriber: groups.length === 0, groups: waiting });
    }
    return summaries;
  }

  /**
   * ms epoch at which the oldest message still waiting for a delivery was accepted, null when
   * none waits (docs/management.md#metrics). Stops at the first waiting one: held messages are
   * in acceptance order, so this is quick unless many at the head are in flight.
   */
  oldestWaitingAcceptedAt(): number | null {
    for (const entry of this.#held) if (entry.pending > 0 || entry.unassigned) return entry.message.acceptedAt;
    return this.#cold?.acceptedAtOfFirst() ?? null;
  }

  /** deliveries in flight to this subscriber (a consumer's prefetch used) */
  inFlightFor(subscriber: Subscriber): number {
    return this.#inFlight.countOf(subscriber);
  }

  /** deliveries in flight per recipient group (only groups with some) */
  inFlightByGroup(): Array<{ readonly mode: SubscriptionMode; readonly clientName: string; readonly pattern: string; readonly inFlight: number }> {
    const counts = new Map<Group, number>();
    for (const record of this.#inFlight) counts.set(record.group, (counts.get(record.group) ?? 0) + 1);
    return [...counts].map(([group, inFlight]) => ({ mode: group.mode, clientName: group.clientName, pattern: group.pattern, inFlight }));
  }

  /** ids as users mean them (`a/b`), for the management API */
  listIds(): Map<string, number> {
    return new Map([...this.idCounts()].map(([id, count]) => [unescapeId(id), count]));
  }

  close(): void {
    this.#closed = true;
    this.#timer.cancel();
  }

  // ---- entries and records ----------------------------------------------------------

  #addEntry(message: StoredMessage): Entry {
    const entry: Entry = { message, records: NO_RECORDS, unassigned: false, pending: 0 };
    this.#bodies.added(entry);
    this.#index.set(message.messageId, entry);
    this.#held.add(entry);
    let ofId = this.#byId.get(message.id);
    if (!ofId) this.#byId.set(message.id, (ofId = new EntryList(this.#isHeld)));
    ofId.add(entry);
    return entry;
  }

  #addRecord(entry: Entry, group: Group, nbRequeues: number, notBefore: number): void {
    const record: DeliveryRecord = { entry, group, state: 'ready', slot: null, nbRequeues, notBefore, deliveredTo: null, deadline: 0 };
    addRecordTo(entry, record);
    group.recordCount++;
    this.#adjustPending(entry, 1);
    if (notBefore > this.#env.now()) {
      this.#delay(record);
    } else if (nbRequeues > 0) {
      group.pushRetry(record);
    } else {
      group.pushFresh(record);
    }
  }

  #adjustPending(entry: Entry, delta: number): void {
    const before = entry.pending > 0 || entry.unassigned;
    entry.pending += delta;
    const after = entry.pending > 0 || entry.unassigned;
    if (before !== after) this.#depth += after ? 1 : -1;
  }

  #markUnassigned(entry: Entry): void {
    const before = entry.pending > 0;
    entry.unassigned = true;
    this.#unassigned.add(entry);
    if (!before) this.#depth++;
  }

  #unmarkUnassigned(entry: Entry): void {
    entry.unassigned = false;
    this.#unassigned.removed();
    if (entry.pending === 0) this.#depth--;
  }

  #settle(record: DeliveryRecord, outcome: Settlement): void {
    const { entry } = record;
    const listed = record.state === 'ready' && record.slot !== null;
    if (record.state === 'inflight') this.#endFlight(record);
    else if (record.state === 'ready' || record.state === 'delayed') this.#adjustPending(entry, -1);
    record.state = 'settled';
    record.slot = null;
    if (listed) record.group.unlisted();
    removeRecordFrom(entry, record);
    record.group.recordCount--;
    this.#record([{ kind: 'settle', messageId: entry.message.messageId, group: record.group.key, outcome }]);
    this.#dropGroupIfEmpty(record.group);
    this.#forgetIfDone(entry);
  }

  #forgetIfDone(entry: Entry): void {
    if (entry.records.length === 0 && !entry.unassigned && this.#isHeld(entry)) {
      this.#forget(entry);
      this.#record([{ kind: 'remove', messageId: entry.message.messageId }]);
    }
  }

  /**
   * Every record of the entry settled with `outcome` (those in flight too, or left to finish),
   * and it is forgotten once none is left. True when it was still waiting anywhere.
   */
  #drop(entry: Entry, outcome: Settlement, inFlightToo: boolean): boolean {
    let waited = false;
    if (entry.unassigned) {
      this.#unmarkUnassigned(entry);
      waited = true;
    }
    const freed: Group[] = [];
    for (const record of [...entry.records]) {
      if (record.state === 'inflight' && !inFlightToo) continue;
      if (record.state === 'inflight') freed.push(record.group);
      this.#settle(record, outcome);
      waited = true;
    }
    this.#forgetIfDone(entry);
    // a delivery dropped in flight (remove, purge) freed its subscriber's prefetch: the group's
    // next messages go now, not at the next send or ack (differential test, seed 10)
    for (const group of freed) this.#pump(group);
    return waited;
  }

  #forget(entry: Entry): void {
    this.#index.delete(entry.message.messageId);
    this.#held.removed();
    this.#env.forgotten?.(entry.message.messageId, entry.message.acceptedAt);
    this.#bodies.forgotten(entry);
    const ofId = this.#byId.get(entry.message.id);
    ofId?.removed();
    if (ofId?.size === 0) this.#byId.delete(entry.message.id);
  }

  #endFlight(record: DeliveryRecord): void {
    this.#inFlight.remove(record);
    record.deliveredTo = null;
    this.#env.flightEnded?.();
  }

  /** a delivery that ended without an ack: requeue, or dead-letter past `requeueLimit` */
  #failDelivery(record: DeliveryRecord, delayMs: number, reason: string): void {
    const { entry } = record;
    if (record.state === 'inflight') {
      this.#endFlight(record);
      record.state = 'ready';
      record.slot = null;
      this.#adjustPending(entry, 1);
    }
    const nbDeliveries = record.nbRequeues + 1;
    if (nbDeliveries >= this.#settings.requeueLimit) {
      const target = this.#settings.deadLetter;
      if (target) this.counters.deadLettered++;
      else this.counters.dropped++;
      this.#env.discard(target, entry.message, record.group.key, nbDeliveries, reason);
      this.#settle(record, target ? 'dead-lettered' : 'dropped');
      // the delivery freed its subscriber's prefetch: the group's next messages go now, not at
      // the next send or ack (differential test, seed 2: a consumer sat idle with two waiting)
      this.#pump(record.group);
      return;
    }
    const now = this.#env.now();
    if (this.#isExpired(entry, now)) {
      this.counters.expired++;
      this.#settle(record, 'expired');
      this.#pump(record.group);
      return;
    }
    this.counters.requeued++;
    record.nbRequeues = nbDeliveries;
    record.notBefore = delayMs > 0 ? now + delayMs : 0;
    this.#record([{ kind: 'requeue', messageId: entry.message.messageId, group: record.group.key, nbRequeues: record.nbRequeues, notBefore: record.notBefore }]);
    if (delayMs > 0) {
      this.#delay(record);
    } else {
      record.group.pushRetry(record);
      this.#pump(record.group);
    }
  }

  #delay(record: DeliveryRecord): void {
    record.state = 'delayed';
    record.slot = null;
    this.#delayed.push({ record, at: record.notBefore });
    this.#timer.armAt(record.notBefore);
  }

  // ---- cold rows (cold.ts) ------------------------------------------------------------

  #restoreCold(message: StoredMessage, keys: readonly string[]): void {
    const groups = keys.map((key) => this.#groupFor(key)).filter((g): g is Group => g !== undefined);
    if (keys.length > 0 && groups.length === 0) {
      // every record named a group this version cannot read: nothing can deliver it
      this.#record([{ kind: 'remove', messageId: message.messageId }]);
      this.#env.forgotten?.(message.messageId, message.acceptedAt);
      return;
    }
    this.#cold!.add(message, groups, groups.map((g) => g.key));
    this.#armTtlAt(message.acceptedAt);
  }

  #settleCold(row: number, key: string): void {
    if (!this.#cold!.settle(row, key, 'acked')) return;
    this.counters.acked++;
    const group = this.#groups.get(key);
    if (group) this.#dropGroupIfEmpty(group);
  }

  #dropCold(row: number, outcome: Settlement): void {
    const keys = this.#backlog.groups(row);
    this.#cold!.drop(row, outcome);
    for (const key of keys) {
      const group = this.#groups.get(key);
      if (group) this.#dropGroupIfEmpty(group);
    }
  }

  /**
   * The first rows become objects again, in acceptance order, a slice per call (bounded in
   * count and time); never past the adoption under way, which has yet to assign them.
   */
  #promoteSlice(): boolean {
    const cold = this.#cold!;
    const started = performance.now();
    let n = 0;
    for (; n < PROMOTE_SLICE; n++) {
      if (n % ADOPT_CHECK === ADOPT_CHECK - 1 && performance.now() - started >= ADOPT_SLICE_MS) break;
      if (this.#adoptColdAt !== null && cold.firstPosition >= this.#adoptColdAt) break;
      const taken = cold.takeFirst();
      if (!taken) break;
      this.#hold(taken.message, taken.groups);
    }
    return n > 0;
  }

  /** rows up to this one become objects (a requeue heard for a cold row: rare, see ackReplayed) */
  #promoteThrough(row: number): void {
    const cold = this.#cold!;
    const messageId = this.#backlog.messageId(row);
    while (this.#coldRow(messageId) >= 0) {
      const taken = cold.takeFirst();
      if (!taken) return;
      this.#hold(taken.message, taken.groups);
    }
  }

  /** a promoted row: its objects, its records ready in each group (a row counted as waiting already) */
  #hold(message: StoredMessage, keys: readonly string[]): void {
    this.#depth--;
    const entry = this.#addEntry(message);
    if (keys.length === 0) this.#markUnassigned(entry);
    for (const key of keys) {
      const group = this.#groupFor(key);
      if (group) this.#addRecord(entry, group, 0, 0);
    }
    this.#armTtl(entry);
  }

  #pumpLater(group: Group): void {
    if (this.#pumpSoon.size === 0) {
      setImmediate(() => {
        const groups = [...this.#pumpSoon];
        this.#pumpSoon.clear();
        if (!this.#closed) for (const g of groups) this.#pump(g);
      });
    }
    this.#pumpSoon.add(group);
  }

  // ---- groups and delivery ----------------------------------------------------------

  #matchingGroups(id: string): Group[] {
    const groups: Group[] = [];
    for (const group of this.#groups.values()) if (group.matches(id)) groups.push(group);
    return groups;
  }

  #groupFor(key: string): Group | undefined {
    const existing = this.#groups.get(key);
    if (existing) return existing;
    const parsed = parseGroupKey(key);
    if (!parsed) return undefined;
    const group = new Group(parsed.mode, parsed.clientName, parsed.pattern);
    this.#groups.set(key, group);
    return group;
  }

  /**
   * New groups take the messages that were waiting for a subscriber of their ids, in
   * acceptance order, a slice per turn; the rest continues on the next turn.
   */
  #adoptSome(): void {
    if ((!this.#adoptCursor && this.#adoptColdAt === null) || this.#closed) return;
    const events: StoreEvent[] = [];
    const touched = new Set<Group>();
    // messages of one id share their groups: one keys array for the slice while they repeat
    let lastId: string | null = null;
    let groups: Group[] = [];
    let keys: readonly string[] = [];
    const started = performance.now();
    let done = false;
    for (let n = 0; n < ADOPT_SLICE; n++) {
      if (n % ADOPT_CHECK === ADOPT_CHECK - 1 && performance.now() - started >= ADOPT_SLICE_MS) break;
      // the objects first, then the cold rows (all newer)
      const entry = this.#adoptCursor?.();
      let row = -1;
      if (!entry) {
        if (this.#adoptCursor) {
          this.#adoptCursor = null;
          if (this.#cold === null || this.#cold.size === 0) {
            done = true;
            break;
          }
          this.#adoptColdAt = this.#cold.firstPosition;
        }
        const next = this.#cold!.next(this.#adoptColdAt!);
        if (!next) {
          done = true;
          break;
        }
        this.#adoptColdAt = next.position;
        row = next.row;
        if (!this.#cold!.isUnassigned(row)) continue;
      }
      const id = entry ? entry.message.id : this.#backlog.id(row);
      if (id !== lastId) {
        lastId = id;
        groups = this.#matchingGroups(lastId);
        keys = groups.map((g) => g.key);
      }
      if (groups.length === 0) continue;
      for (const group of groups) touched.add(group);
      if (!entry) {
        this.#cold!.assign(row, groups, keys);
        events.push({ kind: 'assign', messageId: this.#backlog.messageId(row), groups: keys });
        continue;
      }
      this.#unmarkUnassigned(entry);
      for (const group of groups) this.#addRecord(entry, group, 0, 0);
      events.push({ kind: 'assign', messageId: entry.message.messageId, groups: keys });
    }
    if (events.length > 0) this.#record(events);
    if (done) {
      this.#adoptCursor = null;
      this.#adoptColdAt = null;
    } else {
      this.#scheduleAdoption();
    }
    for (const group of touched) this.#pump(group);
  }

  #scheduleAdoption(): void {
    if (this.#adoptScheduled) return;
    this.#adoptScheduled = true;
    setImmediate(() => {
      this.#adoptScheduled = false;
      this.#adoptSome();
    });
  }


  #dropGroupIfEmpty(group: Group): void {
    if (group.memberCount > 0 || group.recordCount > 0 || this.#groups.get(group.key) !== group) return;
    this.#groups.delete(group.key);
  }

  #hasCapacity = (subscriber: Subscriber): boolean => {
    const held = this.#inFlight.countOf(subscriber);
    return subscriber.isWritable() && held < subscriber.prefetch && held < (subscriber.limit ?? Infinity);
  };

  #pumpAll(): void {
    for (const group of this.#groups.values()) this.#pump(group);
  }

  /**
   * Pumps asked for while `work` runs (requeues of one unsubscribe or one timer wake) happen
   * once at its end: the requeued records then go in order together, as they would if every body
   * were in memory (a pump that stops to read a body back would let the next requeue overtake
   * it; differential test, seed 1335)
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

  #pump(group: Group): void {
    if (this.#deferred) {
      this.#deferred.add(group);
      return;
    }
    if (!this.#delivering || group.memberCount === 0 || this.#env.isDraining?.()) return;
    let promoted = false;
    for (;;) {
      if (group.coldCount > 0 && !promoted && group.freshListed < PROMOTE_LOW) promoted = this.#promoteSlice() || true;
      const record = group.peekReady();
      if (!record) {
        // rows ahead of this group's were promoted without reaching its own: more next turn
        if (group.coldCount > 0) this.#pumpLater(group);
        return;
      }
      const now = this.#env.now();
      if (this.#isExpired(record.entry, now)) {
        group.takeReady(record);
        this.counters.expired++;
        this.#settle(record, 'expired');
        continue;
      }
      if (record.entry.message.data === undefined) return this.#bodies.load(group);
      const member = group.pickMember(this.#hasCapacity);
      if (!member) return;
      group.takeReady(record);
      this.#deliver(record, member, now);
      if (group.readAheadSeq !== 0 && record.entry.message.seq >= group.readAheadSeq) this.#bodies.load(group);
    }
  }

  /** a message whose body the store no longer has: counted and logged as dropped */
  #lose(entry: Entry): void {
    this.counters.dropped++;
    this.#drop(entry, 'dropped', false);
  }

  #deliver(record: DeliveryRecord, subscriber: Subscriber, now: number): void {
    const { entry } = record;
    this.#adjustPending(entry, -1);
    record.state = 'inflight';
    record.slot = null;
    record.deliveredTo = subscriber;
    record.deadline = now + this.#settings.requeueIntervalMs;
    this.#inFlight.add(record, subscriber);
    this.#timer.armAt(record.deadline);
    this.counters.delivered++;
    const m = entry.message;
    this.#record([{ kind: 'deliver', messageId: m.messageId, group: record.group.key, nbRequeues: record.nbRequeues }]);
    subscriber.deliver({
      sub: 0,
      messageId: m.messageId,
      channel: `${m.queue}/${m.id}`,
      data: m.data,
      created: m.created,
      nbRequeues: record.nbRequeues,
      from: m.from,
      via: record.group.pattern,
    }, m.json);
  }

  // ---- time: ack timeouts, delayed requeues, ttl ---------------------------------------

  #isExpired(entry: Entry, now: number): boolean {
    const ttl = this.#settings.ttlMs;
    return ttl !== null && entry.message.acceptedAt + ttl <= now;
  }

  #armTtl(entry: Entry): void {
    const ttl = this.#settings.ttlMs;
    if (ttl === null) return;
    this.#ttlOrder.push(entry);
    this.#timer.armAt(entry.message.acceptedAt + ttl);
  }

  /** a cold row's ttl: #wake walks the rows from the first */
  #armTtlAt(acceptedAt: number): void {
    const ttl = this.#settings.ttlMs;
    if (ttl !== null) this.#timer.armAt(acceptedAt + ttl);
  }

  #wake(): void {
    this.#batched(() => this.#wakeAt());
  }

  #wakeAt(): void {
    const now = this.#env.now();
    let next = Infinity;

    for (const record of this.#inFlight) {
      if (record.deadline > now) {
        next = Math.min(next, record.deadline);
        break;
      }
      this.counters.timedOut++;
      this.#failDelivery(record, 0, 'ack timeout');
    }

    while (this.#delayed.size > 0) {
      const { record, at } = this.#delayed.peek() as { record: DeliveryRecord; at: number };
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

    if (this.#loadRetryAt !== 0) {
      if (this.#loadRetryAt <= now) {
        this.#loadRetryAt = 0;
        this.#pumpAll();
      } else {
        next = Math.min(next, this.#loadRetryAt);
      }
    }

    // a slave that follows a master expires what the master expired (its feed), nothing more
    const ttl = this.#ownLimits ? this.#settings.ttlMs : null;
    while (ttl !== null && this.#ttlHead < this.#ttlOrder.length) {
      const entry = this.#ttlOrder[this.#ttlHead] as Entry;
      if (entry.message.acceptedAt + ttl > now) {
        next = Math.min(next, entry.message.acceptedAt + ttl);
        break;
      }
      this.#ttlHead++;
      this.#expire(entry);
    }
    for (let row = this.#cold?.firstRow() ?? -1; ttl !== null && row >= 0; row = this.#cold!.firstRow()) {
      const at = this.#backlog.acceptedAt(row) + ttl;
      if (at > now) {
        next = Math.min(next, at);
        break;
      }
      this.counters.expired++;
      this.#dropCold(row, 'expired');
    }
    if (this.#ttlHead > 1024 && this.#ttlHead * 2 > this.#ttlOrder.length) {
      this.#ttlOrder = this.#ttlOrder.slice(this.#ttlHead);
      this.#ttlHead = 0;
    }
    if (next !== Infinity) this.#timer.armAt(next);
  }

  /** ttl passed: every record not in flight expires; in-flight ones finish (SPEC §7) */
  #expire(entry: Entry): void {
    if (!this.#isHeld(entry)) return;
    if (this.#drop(entry, 'expired', false)) this.counters.expired++;
  }

  #dropOldest(id: string): void {
    const isWaiting = (entry: Entry) => entry.pending > 0 || entry.unassigned;
    let victim: Entry | undefined;
    for (const entry of this.#byId.get(id) ?? []) if (isWaiting(entry)) { victim = entry; break; }
    // objects are older than cold rows: the oldest of the id, else the oldest of all
    const cold = this.#cold;
    const row = (ofId: boolean) => (cold === null ? -1 : ofId ? (cold.rowsOf(id).next().value ?? -1) : cold.firstRow());
    let victimRow = victim ? -1 : row(true);
    if (!victim && victimRow < 0) for (const entry of this.#held) if (isWaiting(entry)) { victim = entry; break; }
    if (!victim && victimRow < 0) victimRow = row(false);
    if (victimRow >= 0) {
      this.counters.dropped++;
      this.#dropCold(victimRow, 'dropped');
      return;
    }
    if (!victim) return;
    this.counters.dropped++;
    this.#drop(victim, 'dropped', false);
  }
}

