import { WILDCARD } from '../../protocol/channel.js';
import type { Delivery, SubscriptionMode } from '../../protocol/frames.js';
import { MinHeap } from './heap.js';
import type { RowRing } from './row-ring.js';

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

/**
 * A message's record in one group while it is more than a row says (rows.ts): in flight,
 * requeued (with its count), delayed. A record ready for its first delivery has no object: its
 * row names the group and the group's cursor reaches it. It goes when the record is settled.
 */
export interface DeliveryRecord {
  readonly row: number;
  /** the row's acceptance number: retries are ordered by it */
  readonly seq: number;
  readonly group: Group;
  state: RecordState;
  /** listed in the group's retries: a record may sit there after it left, and is skipped */
  listed: boolean;
  nbRequeues: number;
  /** ms epoch: not delivered before this (delayed requeue) */
  notBefore: number;
  deliveredTo: Subscriber | null;
  /** ms epoch: redelivered if not acked by then */
  deadline: number;
}

/** what a group reads of its queue's rows */
export interface GroupRows {
  readonly ring: RowRing;
  /** the row waits in this group for its first delivery (named there, no record object) */
  isFresh(row: number, group: Group): boolean;
}

const SWEEP_MIN = 1024;
/** rows a cursor passes over in one look (rows of other ids): a pump then continues next turn */
export const SCAN_BUDGET = 20_000;

const isListed = (record: DeliveryRecord): boolean => record.state === 'ready' && record.listed;

export class Group {
  readonly key: string;
  readonly mode: SubscriptionMode;
  readonly clientName: string;
  readonly pattern: string;
  /** rows naming this group (records not yet settled), kept by the queue */
  recordCount = 0;
  /** ms epoch: kept without members until then (its last member's connection was lost); 0: not held */
  heldUntil = 0;
  /** bodies being read back from the store for this group's next deliveries (bodies.ts) */
  loading = false;
  /** delivering the message of this seq starts reading the next bodies; 0: nothing to read */
  readAheadSeq = 0;
  readonly #rows: GroupRows;
  readonly #members: Subscriber[] = [];
  #member = 0;
  /** position in the queue's ring of the next row to look at for a first delivery */
  #cursor: number;
  /** requeued records, ordered by seq so none overtakes what it was behind */
  readonly #retries = new MinHeap<DeliveryRecord>((r) => r.seq);
  #retrySweepAt = SWEEP_MIN;

  constructor(mode: SubscriptionMode, clientName: string, pattern: string, rows: GroupRows) {
    this.mode = mode;
    this.clientName = clientName;
    this.pattern = pattern;
    this.key = groupKey(mode, clientName, pattern);
    this.#rows = rows;
    this.#cursor = rows.ring.head;
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
    if (this.#member > index) this.#member--;
  }

  /** slots of the retry list, records that left it and are not swept yet included */
  get listedSlots(): number {
    return this.#retries.size;
  }

  /** a row before the cursor now names this group (it was adopted): the cursor goes back to it */
  rewind(position: number): void {
    if (position < this.#cursor) this.#cursor = position;
  }

  /**
   * The next row waiting here for its first delivery, the cursor left on it; -1: none, -2: the
   * look passed SCAN_BUDGET rows of other groups (more next turn)
   */
  peekFresh(): number {
    const ring = this.#rows.ring;
    let p = ring.next(this.#cursor);
    for (let n = 0; p < ring.tail; p = ring.next(p + 1)) {
      const row = ring.rowAt(p);
      if (this.#rows.isFresh(row, this)) {
        this.#cursor = p;
        return row;
      }
      if (++n >= SCAN_BUDGET) {
        this.#cursor = p + 1;
        return -2;
      }
    }
    this.#cursor = p;
    return -1;
  }

  /** the row `peekFresh` gave is delivered */
  takeFresh(): void {
    this.#cursor++;
  }

  /** the next requeued record ready, without taking it */
  peekRetry(): DeliveryRecord | undefined {
    while (this.#retries.size > 0 && !isListed(this.#retries.peek()!)) this.#retries.pop();
    return this.#retries.peek();
  }

  takeRetry(): void {
    this.#retries.pop()!.listed = false;
  }

  pushRetry(record: DeliveryRecord): void {
    const listed = isListed(record);
    record.state = 'ready';
    record.listed = true;
    if (listed) return;
    if (this.#retries.size >= this.#retrySweepAt) {
      this.#retries.retain(isListed);
      this.#retrySweepAt = Math.max(SWEEP_MIN, 2 * this.#retries.size);
    }
    this.#retries.push(record);
  }

  /** a listed record was settled without being taken: a slave never delivers, its list lets go now */
  unlisted(): void {
    this.peekRetry();
  }

  /** rows of the next first deliveries after the one `peekFresh` gave, as far as `limit` */
  upcomingFresh(limit: number): number[] {
    const ring = this.#rows.ring;
    const rows: number[] = [];
    for (let p = ring.next(this.#cursor), n = 0; p < ring.tail && rows.length < limit && n < SCAN_BUDGET; p = ring.next(p + 1), n++) {
      const row = ring.rowAt(p);
      if (this.#rows.isFresh(row, this)) rows.push(row);
    }
    return rows;
  }

  /** round-robin in subscription order among members that can take one more delivery */
  pickMember(hasCapacity: (subscriber: Subscriber) => boolean): Subscriber | undefined {
    const count = this.#members.length;
    for (let i = 0; i < count; i++) {
      const index = (this.#member + i) % count;
      const member = this.#members[index] as Subscriber;
      if (hasCapacity(member)) {
        this.#member = (index + 1) % count;
        return member;
      }
    }
    return undefined;
  }
}
