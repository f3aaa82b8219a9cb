import type { Settlement, StoredMessage, StoreEvent } from '../store/store.js';
import { type Backlog, ColdList } from './backlog.js';
import type { Group } from './group.js';

/** what one queue's cold rows need from it */
export interface ColdOwner {
  readonly name: string;
  readonly backlog: Backlog;
  record(events: StoreEvent[]): void;
  /** the group of this key, made from the key when the queue has none (a restored record) */
  group(key: string): Group | undefined;
  /** the message left the queue for good (the router's dedupe window takes its id) */
  forgotten(messageId: string, acceptedAt: number): void;
  /** messages waiting: +1 when a row is added, -1 when one leaves without being promoted */
  depthChanged(delta: number): void;
}

/** a row as `whisker list -m` shows it */
export interface ColdSummary {
  readonly messageId: string;
  readonly message: StoredMessage;
  readonly groups: readonly string[];
}

/**
 * One queue's waiting messages that are kept as Backlog rows (backlog.ts): newer than every
 * message the queue holds as objects, in acceptance order, each either waiting for a subscriber
 * (no group) or ready, never delivered, in the groups named. The queue promotes rows from the
 * first one as its groups near them; everything else (acks and settlements heard from the
 * master, ttl, purges, listings) is answered on the row itself.
 */
export class ColdTier {
  readonly #owner: ColdOwner;
  readonly #list: ColdList;
  /** rows per canonical id (`whisker list`, drop-oldest) */
  readonly #byId = new Map<string, number>();

  constructor(owner: ColdOwner) {
    this.#owner = owner;
    this.#list = new ColdList(owner.backlog);
  }

  get size(): number {
    return this.#list.size;
  }

  /** the row of a message this queue keeps cold, -1 otherwise */
  rowOf(messageId: string): number {
    const row = this.#owner.backlog.find(messageId);
    return row >= 0 && this.#owner.backlog.queue(row) === this.#owner.name ? row : -1;
  }

  /** a stored message joins the rows, ready in `groups` (none: it waits for a subscriber) */
  add(message: StoredMessage, groups: readonly Group[], keys: readonly string[]): void {
    const row = this.#owner.backlog.add(message, keys);
    // its body is on disk: an object still naming it elsewhere (the store's) must not keep it alive
    message.data = undefined;
    message.json = undefined;
    this.#list.push(row);
    this.#byId.set(message.id, (this.#byId.get(message.id) ?? 0) + 1);
    for (const group of groups) {
      group.recordCount++;
      group.coldCount++;
    }
    this.#owner.depthChanged(1);
  }

  /** the first row, taken off to be held as objects (the caller indexes it again); null: none */
  takeFirst(): { message: StoredMessage; groups: readonly string[] } | null {
    const row = this.#list.first();
    if (row < 0) return null;
    this.#list.shift();
    const { backlog } = this.#owner;
    const message = backlog.message(row);
    const groups = backlog.groups(row);
    for (const key of groups) this.#countOff(key);
    this.#idLeft(message.id);
    backlog.free(row);
    return { message, groups };
  }

  /** position of the first row: `takeFirst` stops before a cursor's position (adoption) */
  get firstPosition(): number {
    return this.#list.headPosition;
  }

  /** the row at or after a position, for a walk across turns; null at the end */
  next(position: number): { row: number; position: number } | null {
    return this.#list.next(position);
  }

  /** the first row, -1 when none */
  firstRow(): number {
    return this.#list.first();
  }

  acceptedAtOfFirst(): number | null {
    const row = this.#list.first();
    return row < 0 ? null : this.#owner.backlog.acceptedAt(row);
  }

  rows(): IterableIterator<number> {
    return this.#list[Symbol.iterator]();
  }

  /** rows of one id, in order */
  *rowsOf(id: string): IterableIterator<number> {
    if (!this.#byId.has(id)) return;
    for (const row of this.#list) if (this.#owner.backlog.id(row) === id) yield row;
  }

  idCounts(): ReadonlyMap<string, number> {
    return this.#byId;
  }

  summary(row: number): ColdSummary {
    const { backlog } = this.#owner;
    return { messageId: backlog.messageId(row), message: backlog.message(row), groups: backlog.groups(row) };
  }

  /** the message waits for a subscriber (no group was found for it) */
  isUnassigned(row: number): boolean {
    return this.#owner.backlog.groups(row).length === 0;
  }

  /** a new group takes a message that waited for a subscriber (adoption) */
  assign(row: number, groups: readonly Group[], keys: readonly string[]): void {
    this.#owner.backlog.setGroups(row, keys);
    for (const group of groups) {
      group.recordCount++;
      group.coldCount++;
    }
  }

  /** the message's record in one group is settled; the row goes once none is left. False: no such record */
  settle(row: number, key: string, outcome: Settlement): boolean {
    const { backlog } = this.#owner;
    const groups = backlog.groups(row);
    if (!groups.includes(key)) return false;
    const messageId = backlog.messageId(row);
    this.#countOff(key);
    const left = groups.filter((g) => g !== key);
    const events: StoreEvent[] = [{ kind: 'settle', messageId, group: key, outcome }];
    if (left.length > 0) backlog.setGroups(row, left);
    else this.#remove(row, events);
    this.#owner.record(events);
    return true;
  }

  /** every record of the message settled with `outcome`, and the message forgotten */
  drop(row: number, outcome: Settlement): void {
    const { backlog } = this.#owner;
    const messageId = backlog.messageId(row);
    const events: StoreEvent[] = [];
    for (const key of backlog.groups(row)) {
      this.#countOff(key);
      events.push({ kind: 'settle', messageId, group: key, outcome });
    }
    this.#remove(row, events);
    this.#owner.record(events);
  }

  #remove(row: number, events: StoreEvent[]): void {
    const { backlog } = this.#owner;
    const messageId = backlog.messageId(row);
    const acceptedAt = backlog.acceptedAt(row);
    events.push({ kind: 'remove', messageId });
    this.#list.remove(row);
    this.#idLeft(backlog.id(row));
    backlog.free(row);
    this.#owner.depthChanged(-1);
    this.#owner.forgotten(messageId, acceptedAt);
  }

  #countOff(key: string): void {
    const group = this.#owner.group(key);
    if (!group) return;
    group.recordCount--;
    group.coldCount--;
  }

  #idLeft(id: string): void {
    const count = this.#byId.get(id)! - 1;
    if (count > 0) this.#byId.set(id, count);
    else this.#byId.delete(id);
  }
}
