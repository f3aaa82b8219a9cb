import type { DeliveryRecord, Subscriber } from './group.js';

/**
 * One queue's deliveries handed out and not yet answered, in deadline order (every delivery
 * gets the same requeue interval, so insertion order is deadline order), and how many each
 * subscriber holds against its prefetch.
 */
export class InFlight {
  readonly #records = new Set<DeliveryRecord>();
  readonly #bySubscriber = new Map<Subscriber, number>();
  /** when each touched delivery was handed out (ms epoch): its deadline moved, so it is not deadline - interval */
  readonly #deliveredAt = new Map<DeliveryRecord, number>();

  get size(): number {
    return this.#records.size;
  }

  /** the delivery due first */
  first(): DeliveryRecord | undefined {
    return this.#records.values().next().value;
  }

  [Symbol.iterator](): IterableIterator<DeliveryRecord> {
    return this.#records.values();
  }

  add(record: DeliveryRecord, subscriber: Subscriber): void {
    this.#records.add(record);
    this.#bySubscriber.set(subscriber, (this.#bySubscriber.get(subscriber) ?? 0) + 1);
  }

  /**
   * A touch: the deadline becomes now + interval, which is the latest of all (the set stays in
   * deadline order with the record moved to its end). Refused (false) when that would pass
   * `maxTouchMs` after the delivery.
   */
  touch(record: DeliveryRecord, now: number, intervalMs: number, maxTouchMs: number): boolean {
    if (!this.#records.has(record)) return false;
    const deliveredAt = this.#deliveredAt.get(record) ?? record.deadline - intervalMs;
    const deadline = now + intervalMs;
    if (deadline > deliveredAt + maxTouchMs || deadline <= record.deadline) return false;
    this.#deliveredAt.set(record, deliveredAt);
    record.deadline = deadline;
    this.#records.delete(record);
    this.#records.add(record);
    return true;
  }

  /** the delivery ended: its subscriber holds one less */
  remove(record: DeliveryRecord): void {
    this.#deliveredAt.delete(record);
    this.#records.delete(record);
    const subscriber = record.deliveredTo;
    if (!subscriber) return;
    const count = (this.#bySubscriber.get(subscriber) ?? 1) - 1;
    if (count > 0) this.#bySubscriber.set(subscriber, count);
    else this.#bySubscriber.delete(subscriber);
  }

  countOf(subscriber: Subscriber): number {
    return this.#bySubscriber.get(subscriber) ?? 0;
  }

  /** a subscriber that left the queue: nothing is counted for it any more */
  forget(subscriber: Subscriber): void {
    this.#bySubscriber.delete(subscriber);
  }

  /** every deadline moves by `ms` (a reload changed requeueInterval): the order stays */
  shift(ms: number): void {
    for (const record of this.#records) record.deadline += ms;
    for (const [record, at] of this.#deliveredAt) this.#deliveredAt.set(record, at + ms);
  }
}
