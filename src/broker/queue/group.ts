import { WILDCARD } from '../../protocol/channel.js';
import type { Delivery, SubscriptionMode } from '../../protocol/frames.js';
import { MinHeap } from './heap.js';
import type { StoredMessage } from '../store/store.js';

/**
 * A recipient group (SPEC §7): every consumer of one id pattern, or every listener of one
 * client name on one id pattern. A message has one delivery record per group, and each group
 * acks for itself. Keys are stable strings so a durable store can give records back.
 */
export function groupKey(mode: SubscriptionMode, clientName: string, pattern: string): string {
  return mode === 'consume' ? `c|${pattern}` : `l|${clientName}|${pattern}`;
}

export function parseGroupKey(key: string): { mode: SubscriptionMode; clientName: string; pattern: string } | null {
  if (key.startsWith('c|')) return { mode: 'consume', clientName: '', pattern: key.slice(2) };
  if (!key.startsWith('l|')) return null;
  const bar = key.indexOf('|', 2);
  if (bar < 0) return null;
  return { mode: 'listen', clientName: key.slice(2, bar), pattern: key.slice(bar + 1) };
}

/** What a queue sees of one listen/consume handler on one connection. */
export interface Subscriber {
  readonly clientName: string;
  readonly mode: SubscriptionMode;
  /** most unacked deliveries at once; Infinity for listeners */
  readonly prefetch: number;
  /** the client's flow limit beneath prefetch (docs/protocol.md#flow); 0 paused; absent: none */
  readonly limit?: number;
  /** false while the connection's outbound buffer is past its bound */
  isWritable(): boolean;
  /** `dataJson`: `delivery.data` as JSON when the message has it (StoredMessage.json) */
  deliver(delivery: Delivery, dataJson?: string): void;
}

export type RecordState = 'ready' | 'delayed' | 'inflight' | 'settled';

export interface Entry {
  readonly message: StoredMessage;
  /**
   * One record per group, few groups per message: a small array replaced on change (shared
   * empty one while the message waits), not a Map of ~270 bytes each (bounded memory, SPEC §7).
   */
  records: readonly DeliveryRecord[];
  /** no group existed at acceptance: the message waits for the first matching subscriber */
  unassigned: boolean;
  /** records waiting to be delivered (ready or delayed) */
  pending: number;
}

export interface DeliveryRecord {
  readonly entry: Entry;
  readonly group: Group;
  state: RecordState;
  /** which ready list holds it: a record may sit in a list it left, and is skipped there */
  slot: 'fresh' | 'retry' | null;
  nbRequeues: number;
  /** ms epoch: not delivered before this (delayed requeue) */
  notBefore: number;
  deliveredTo: Subscriber | null;
  /** ms epoch: redelivered if not acked by then */
  deadline: number;
}

const SWEEP_MIN = 1024;

export const NO_RECORDS: readonly DeliveryRecord[] = [];

export function recordOf(entry: Entry, key: string): DeliveryRecord | undefined {
  for (const record of entry.records) if (record.group.key === key) return record;
  return undefined;
}

export function addRecordTo(entry: Entry, record: DeliveryRecord): void {
  // the usual case, a message's first record, makes one array
  entry.records = entry.records.length === 0 ? [record] : [...entry.records.filter((r) => r.group.key !== record.group.key), record];
}

export function removeRecordFrom(entry: Entry, record: DeliveryRecord): void {
  const records = entry.records.filter((r) => r !== record);
  entry.records = records.length === 0 ? NO_RECORDS : records;
}

function isListed(record: DeliveryRecord, slot: 'fresh' | 'retry'): boolean {
  return record.state === 'ready' && record.slot === slot;
}

export class Group {
  readonly key: string;
  readonly mode: SubscriptionMode;
  readonly clientName: string;
  readonly pattern: string;
  /** delivery records of this group not yet settled, kept by the queue */
  recordCount = 0;
  /** ms epoch: kept without members until then (its last member's connection was lost); 0: not held */
  heldUntil = 0;
  /** of those, records of messages the queue keeps as cold rows (cold.ts): not in the lists below */
  coldCount = 0;
  /** bodies being read back from the store for this group's next deliveries (queue.ts) */
  loading = false;
  /** delivering the message of this seq starts reading the next bodies; 0: nothing to read */
  readAheadSeq = 0;
  readonly #members: Subscriber[] = [];
  #cursor = 0;
  // first deliveries in acceptance order; retries ordered by seq so none overtakes what it was behind
  #fresh: DeliveryRecord[] = [];
  #freshHead = 0;
  readonly #retries = new MinHeap<DeliveryRecord>((r) => r.entry.message.seq);
  /** a list this long (slots after the head) is swept of records that left it: bounded by ~2x its live ones */
  #freshSweepAt = SWEEP_MIN;
  #retrySweepAt = SWEEP_MIN;

  constructor(mode: SubscriptionMode, clientName: string, pattern: string) {
    this.mode = mode;
    this.clientName = clientName;
    this.pattern = pattern;
    this.key = groupKey(mode, clientName, pattern);
  }

  get memberCount(): number {
    return this.#members.length;
  }

  hasMember(subscriber: Subscriber): boolean {
    return this.#members.includes(subscriber);
  }

  matches(messageId: string): boolean {
    return this.pattern === WILDCARD || messageId === WILDCARD || this.pattern === messageId;
  }

  addMember(subscriber: Subscriber): void {
    if (!this.#members.includes(subscriber)) this.#members.push(subscriber);
  }

  removeMember(subscriber: Subscriber): void {
    const index = this.#members.indexOf(subscriber);
    if (index < 0) return;
    this.#members.splice(index, 1);
    if (this.#cursor > index) this.#cursor--;
  }

  /** first deliveries listed and not yet taken (some may have been settled meanwhile) */
  get freshListed(): number {
    return this.#fresh.length - this.#freshHead;
  }

  /** slots of the ready lists, records that left them and are not swept yet included */
  get listedSlots(): number {
    return this.#fresh.length + this.#retries.size;
  }

  /** a record becomes ready for its first delivery (called in acceptance order) */
  pushFresh(record: DeliveryRecord): void {
    record.state = 'ready';
    record.slot = 'fresh';
    if (this.#fresh.length - this.#freshHead >= this.#freshSweepAt) {
      this.#fresh = this.#fresh.slice(this.#freshHead).filter((r) => isListed(r, 'fresh'));
      this.#freshHead = 0;
      this.#freshSweepAt = Math.max(SWEEP_MIN, 2 * this.#fresh.length);
    }
    this.#fresh.push(record);
  }

  pushRetry(record: DeliveryRecord): void {
    const listed = record.state === 'ready' && record.slot === 'retry';
    record.state = 'ready';
    record.slot = 'retry';
    if (listed) return;
    if (this.#retries.size >= this.#retrySweepAt) {
      this.#retries.retain((r) => isListed(r, 'retry'));
      this.#retrySweepAt = Math.max(SWEEP_MIN, 2 * this.#retries.size);
    }
    this.#retries.push(record);
  }

  /**
   * A listed record was settled without being taken: a slave never delivers, so its lists must
   * let go of what its acks settle here, not at the next delivery (issue 27: a slave's heap grew).
   */
  unlisted(): void {
    this.#trim();
  }

  /** the next ready record in order, without taking it; skips records settled meanwhile */
  peekReady(): DeliveryRecord | undefined {
    this.#trim();
    const fresh = this.#fresh[this.#freshHead];
    const retry = this.#retries.peek();
    if (!retry) return fresh;
    if (!fresh) return retry;
    return retry.entry.message.seq < fresh.entry.message.seq ? retry : fresh;
  }

  /**
   * The next ready records in delivery order, as far as a look-ahead goes: the one
   * `peekReady` gives, then first deliveries after it (retries are few and come back hot).
   */
  upcoming(limit: number): DeliveryRecord[] {
    const first = this.peekReady();
    if (!first) return [];
    const records = [first];
    for (let i = this.#freshHead; i < this.#fresh.length && records.length < limit; i++) {
      const record = this.#fresh[i] as DeliveryRecord;
      if (record !== first && isListed(record, 'fresh')) records.push(record);
    }
    return records;
  }

  /** drops what left the lists from their fronts */
  #trim(): void {
    while (this.#freshHead < this.#fresh.length && !isListed(this.#fresh[this.#freshHead] as DeliveryRecord, 'fresh')) this.#freshHead++;
    if (this.#freshHead === this.#fresh.length) {
      if (this.#fresh.length > 0) this.#fresh = [];
      this.#freshHead = 0;
    } else if (this.#freshHead > 1024 && this.#freshHead * 2 > this.#fresh.length) {
      this.#fresh = this.#fresh.slice(this.#freshHead);
      this.#freshHead = 0;
    }
    while (this.#retries.size > 0 && !isListed(this.#retries.peek() as DeliveryRecord, 'retry')) this.#retries.pop();
  }

  takeReady(record: DeliveryRecord): void {
    if (this.#fresh[this.#freshHead] === record) this.#freshHead++;
    else if (this.#retries.peek() === record) this.#retries.pop();
    record.slot = null;
  }

  /** round-robin in subscription order among members that can take one more delivery */
  pickMember(hasCapacity: (subscriber: Subscriber) => boolean): Subscriber | undefined {
    const count = this.#members.length;
    for (let i = 0; i < count; i++) {
      const index = (this.#cursor + i) % count;
      const member = this.#members[index] as Subscriber;
      if (hasCapacity(member)) {
        this.#cursor = (index + 1) % count;
        return member;
      }
    }
    return undefined;
  }
}
