import { IdSlots } from './id-slots.js';
import { Float64Pages, SlotQueue } from './paged.js';

/**
 * Message ids accepted within the last `windowMs` (SPEC §7): a second copy of one is answered
 * as accepted and not queued again. Ids may come out of acceptance order (a broker adds an id
 * when its queue forgets the message, `addAt` with its acceptance time): `has` reads the expiry,
 * and pruning goes from the oldest insertion while expired, so an id stays at most `windowMs`
 * after it was added, and pruning is O(expired).
 *
 * Ids live in IdSlots with paged columns beside them, not in a Map: a Map that grows past a
 * million ids rehashes them all in one turn (26-51 ms measured while a broker drained a
 * backlog), and a window at 10,000 msg/s holds 1.2 million; nothing here grows by copying.
 */
export class DedupeWindow {
  readonly #slots = new IdSlots();
  /** per slot: expiry in ms after `#base`, and the position of its latest insertion in `#order` */
  readonly #expiry = new Float64Pages();
  readonly #orderAt = new Float64Pages();
  /** per slot: a tag the caller gives (the router: its queue's number, so a move hands a queue's ids over), 0 when none */
  readonly #tag = new Float64Pages();
  /** slots in insertion order; an id added again leaves its earlier place behind, skipped */
  readonly #order = new SlotQueue();
  /** no id expires before this (ms after `#base`): `has` runs per message, most calls prune nothing */
  #firstExpiry = Infinity;
  #windowMs: number;
  readonly #now: () => number;
  readonly #base: number;

  constructor(windowMs: number, now: () => number) {
    this.#windowMs = windowMs;
    this.#now = now;
    this.#base = now();
  }

  get windowMs(): number {
    return this.#windowMs;
  }

  set windowMs(value: number) {
    this.#windowMs = value;
  }

  has(messageId: string): boolean {
    const now = this.#now() - this.#base;
    this.#prune(now);
    const slot = this.#slots.find(messageId);
    return slot >= 0 && this.#expiry.read(slot) > now;
  }

  add(messageId: string): void {
    this.addAt(messageId, this.#now());
  }

  /** remembers an id seen at `seenAt` (ms epoch), in any order: one already expired is not kept */
  addAt(messageId: string, seenAt: number, tag = 0): void {
    const expiresAt = seenAt + this.#windowMs - this.#base;
    if (this.#windowMs <= 0 || expiresAt <= this.#now() - this.#base) return;
    let slot = this.#slots.find(messageId);
    if (slot < 0) slot = this.#slots.add(messageId);
    this.#expiry.put(slot, expiresAt);
    this.#tag.put(slot, tag);
    // a later insertion goes to the end of the order, so the pruning from the head stays fair
    this.#orderAt.put(slot, this.#order.push(slot));
    if (expiresAt < this.#firstExpiry) this.#firstExpiry = expiresAt;
  }

  /** the ids still remembered, in the order they were added; read it through before the window changes (a prune drops pages it walks) */
  *ids(): IterableIterator<string> {
    const now = this.#now() - this.#base;
    this.#prune(now);
    for (let p = this.#order.head; p < this.#order.tail; p++) {
      const slot = this.#order.at(p);
      if (this.#orderAt.read(slot) === p && this.#expiry.read(slot) > now) yield this.#slots.idAt(slot)!;
    }
  }

  /** the ids still remembered with this tag, each with the time it was seen (as `addAt` took it) */
  *tagged(tag: number): IterableIterator<[messageId: string, seenAt: number]> {
    const now = this.#now() - this.#base;
    this.#prune(now);
    for (let p = this.#order.head; p < this.#order.tail; p++) {
      const slot = this.#order.at(p);
      if (this.#orderAt.read(slot) !== p || this.#tag.read(slot) !== tag) continue;
      const expiresAt = this.#expiry.read(slot);
      if (expiresAt > now) yield [this.#slots.idAt(slot)!, expiresAt + this.#base - this.#windowMs];
    }
  }

  delete(messageId: string): void {
    const slot = this.#slots.find(messageId);
    if (slot < 0) return;
    this.#forget(slot);
    // the next id in line may expire sooner: the next prune looks again
    this.#firstExpiry = 0;
  }

  #prune(now: number): void {
    if (now < this.#firstExpiry) return;
    const order = this.#order;
    while (order.head < order.tail) {
      const slot = order.at(order.head);
      if (this.#orderAt.read(slot) === order.head) {
        const expiresAt = this.#expiry.read(slot);
        if (expiresAt > now) {
          this.#firstExpiry = expiresAt;
          return;
        }
        this.#forget(slot);
      }
      order.shift();
    }
    this.#firstExpiry = Infinity;
  }

  #forget(slot: number): void {
    this.#orderAt.put(slot, -1);
    this.#slots.remove(slot);
  }
}
