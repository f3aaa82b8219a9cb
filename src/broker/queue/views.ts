import { unescapeId } from '../../protocol/channel.js';
import type { SubscriptionMode } from '../../protocol/frames.js';
import type { DeliveryRecord, Group, GroupRows, Subscriber } from './group.js';
import type { InFlight } from './in-flight.js';
import type { MessageRows } from './rows.js';
import type { RowRing } from './row-ring.js';
import type { MessageSummary, QueueCounters } from './types.js';

/**
 * What a queue holds, as its owner (queue.ts) keeps it, and what the router, the mirrors and
 * ops read of it: rows in acceptance order, a record object per delivery under way, the groups.
 * Only reads here; every change is the Queue's.
 */
export class QueueViews implements GroupRows {
  readonly name: string;
  protected readonly rows: MessageRows;
  readonly ring: RowRing;
  protected readonly inFlight: InFlight;
  /** row -> its record objects (in flight, requeued, delayed): few rows have any */
  protected readonly records = new Map<number, DeliveryRecord[]>();
  protected readonly groups = new Map<string, Group>();
  /** rows per canonical id (`whisker list`, drop-oldest) */
  readonly #byId = new Map<string, number>();
  readonly counters: QueueCounters = { received: 0, delivered: 0, acked: 0, requeued: 0, timedOut: 0, deadLettered: 0, dropped: 0, expired: 0 };

  constructor(name: string, rows: MessageRows, ring: RowRing, inFlight: InFlight) {
    this.name = name;
    this.rows = rows;
    this.ring = ring;
    this.inFlight = inFlight;
  }

  /** the row of a message this queue holds, -1 otherwise (the rows are shared by every queue) */
  protected own(messageId: string): number {
    const row = this.rows.find(messageId);
    return row >= 0 && this.ownsRow(row) ? row : -1;
  }

  /** a row freed may have lost its shape (the last row naming it gone): asked only of rows in use */
  protected ownsRow(row: number): boolean {
    return this.rows.has(row) && this.rows.queue(row) === this.name;
  }

  protected recordOf(row: number, key: string): DeliveryRecord | undefined {
    const records = this.records.get(row);
    if (records) for (const record of records) if (record.group.key === key) return record;
    return undefined;
  }

  isFresh(row: number, group: Group): boolean {
    return this.rows.groups(row).includes(group.key) && this.recordOf(row, group.key) === undefined;
  }

  protected idArrived(id: string): void {
    this.#byId.set(id, (this.#byId.get(id) ?? 0) + 1);
  }

  protected idLeft(id: string): void {
    const count = this.#byId.get(id)! - 1;
    if (count > 0) this.#byId.set(id, count);
    else this.#byId.delete(id);
  }

  get size(): number {
    return this.ring.size;
  }

  /** clients' copies of this queue the router holds out of it (a slave waiting for its master to name them: catch-up-hold.ts) */
  waitingForMaster = 0;

  /** what this broker stores of the queue: what it holds, and the copies waiting for the master */
  get storedCount(): number {
    return this.ring.size + this.waitingForMaster;
  }

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  /** slots of the groups' retry lists: records waiting, and settled ones not let go of yet */
  get listedSlots(): number {
    let n = 0;
    for (const group of this.groups.values()) n += group.listedSlots;
    return n;
  }

  /** the keys of the queue's recipient groups (docs/protocol.md#groups) */
  groupKeys(): IterableIterator<string> {
    return this.groups.keys();
  }

  has(messageId: string): boolean {
    return this.own(messageId) >= 0;
  }

  /** the ids of every message held, in acceptance order, pushed onto `into` (a sync to a mirror: no object per row) */
  heldIds(into: string[]): void {
    for (const row of this.ring) into.push(this.rows.messageId(row));
  }

  /** ids in their canonical escaped form, as in channel strings (`whisker list`) */
  idCounts(): ReadonlyMap<string, number> {
    return this.#byId;
  }

  /** ids as users mean them (`a/b`), for the management API */
  listIds(): Map<string, number> {
    return new Map([...this.#byId].map(([id, count]) => [unescapeId(id), count]));
  }

  /** what `whisker list -m` shows of the messages held, oldest first: never their bodies */
  messages(id?: string, limit = Infinity): MessageSummary[] {
    const summaries: MessageSummary[] = [];
    if (id !== undefined && !this.#byId.has(id)) return summaries;
    for (const row of this.ring) {
      if (summaries.length >= limit) break;
      if (id !== undefined && this.rows.id(row) !== id) continue;
      const keys = this.rows.groups(row);
      const groups = keys.map((key) => {
        const record = this.recordOf(row, key);
        return { group: key, state: record?.state ?? 'ready', nbRequeues: record?.nbRequeues ?? 0 };
      });
      const m = this.rows.message(row, undefined);
      summaries.push({ messageId: m.messageId, id: m.id, created: m.created, acceptedAt: m.acceptedAt, from: m.from, waitingForSubscriber: keys.length === 0, groups });
    }
    return summaries;
  }

  /**
   * ms epoch at which the oldest message still waiting for a delivery was accepted, null when
   * none waits (docs/management.md#metrics). Stops at the first waiting one.
   */
  oldestWaitingAcceptedAt(): number | null {
    for (const row of this.ring) if (this.rows.isWaiting(row)) return this.rows.acceptedAt(row);
    return null;
  }

  /** deliveries in flight to this subscriber (a consumer's prefetch used) */
  inFlightFor(subscriber: Subscriber): number {
    return this.inFlight.countOf(subscriber);
  }

  /** deliveries in flight per recipient group (only groups with some) */
  inFlightByGroup(): Array<{ readonly mode: SubscriptionMode; readonly clientName: string; readonly pattern: string; readonly inFlight: number }> {
    const counts = new Map<Group, number>();
    for (const record of this.inFlight) counts.set(record.group, (counts.get(record.group) ?? 0) + 1);
    return [...counts].map(([group, inFlight]) => ({ mode: group.mode, clientName: group.clientName, pattern: group.pattern, inFlight }));
  }
}
