import { IdSlots } from '../../protocol/id-slots.js';
import { Interned } from '../../protocol/interned.js';
import { DeltaPages, Uint16Pages, Uint32Pages } from '../../protocol/paged.js';
import type { StoredMessage } from '../store/store.js';

/**
 * Every waiting message of every queue of a router, as a row of typed columns (bounded memory,
 * SPEC §7; the shape of a NATS JetStream stream, where a consumer's pending map is the only
 * object per message). A row holds what a stored message is (never changed after intake) and
 * which groups it still waits in, or is in flight to; the queue's delivery records (records.ts)
 * exist only for deliveries under way and requeues. Bodies are not here: a queue keeps a cache
 * of them by row (bodies.ts).
 *
 * The message id is the row's slot in one IdSlots (one id map: the router finds a message's
 * queue by it, the queue its row), the durable store's when it has one (store.ts `messageIds`:
 * its index keeps its columns by the same slots, so an id is kept once). What repeats (a row's
 * queue name, channel id, sender and set of group keys) is one interned shape, kept once with a
 * count of the rows naming it: 4 bytes a row where four interned strings took 16. Times and seq
 * are 4-byte distances from a base (paged.ts DeltaPages), not 8-byte doubles.
 */
export class MessageRows {
  /** message id -> row; shared with the store's index, each holding its slots with its own bit */
  readonly #slots: IdSlots;
  #count = 0;
  // columns grow a page at a time (paged.ts): a million rows are never copied in one turn
  /** interned shape: queue, channel id, sender, and the keys of the groups the message is not settled in */
  readonly #shape = new Uint32Pages();
  /** of those groups, how many have it in flight */
  readonly #inFlight = new Uint16Pages();
  readonly #seq = new DeltaPages();
  readonly #created = new DeltaPages();
  /** where the row is in its queue's ring (row-ring.ts), modulo 2^32: a ring holds fewer rows than that */
  readonly #position = new Uint32Pages();
  readonly #shapes = new Interned<Shape>();
  /** the shape of the last row added: a burst to one queue makes no key */
  #lastShape: Shape | null = null;
  #lastRef = -1;

  /** `slots`: the store's id map (`MessageStore.messageIds`), when it has one */
  constructor(slots: IdSlots = new IdSlots()) {
    this.#slots = slots;
    slots.claim(ROWS);
  }

  /** rows in use, every queue together */
  get size(): number {
    return this.#count;
  }

  /** the row of a message, -1 when it has none (the store may still hold its id) */
  find(messageId: string): number {
    const slot = this.#slots.find(messageId);
    return slot >= 0 && this.#slots.holds(slot, ROWS) ? slot : -1;
  }

  /**
   * The row's slot for a StoreEvent (`slot`) when the store's index holds it too, undefined when
   * not: then the index would not hold it for this id when the event is applied (the slot may be
   * freed and taken by another id in between).
   */
  storeSlot(row: number): number | undefined {
    return this.#slots.heldByOther(row, ROWS) ? row : undefined;
  }

  /** the row is in use (a row freed keeps its columns' old values, its shape's included, until taken again) */
  has(row: number): boolean {
    return this.#slots.holds(row, ROWS);
  }

  /** the row is this message's (no string made) */
  isRowOf(row: number, messageId: string): boolean {
    return this.#slots.holds(row, ROWS) && this.#slots.holdsId(row, messageId);
  }

  /** the caller knows the message has no row yet (`find`) */
  add(message: StoredMessage, groups: readonly string[]): number {
    const row = this.#slots.hold(message.messageId, ROWS);
    if (row >= this.#seq.capacity) for (const column of [this.#shape, this.#inFlight, this.#seq, this.#created, this.#position]) column.ensure(row);
    this.#count++;
    this.#shape.set(row, this.#refShape(message.queue, message.id, message.from, groups));
    this.#inFlight.set(row, 0);
    this.#seq.set(row, message.seq);
    this.#created.set(row, message.created);
    // kept once with the store's index, by the slot they share (IdSlots `setShared`)
    this.#slots.setShared(row, message.acceptedAt);
    return row;
  }

  free(row: number): void {
    this.#slots.release(row, ROWS);
    this.#count--;
    this.#unrefShape(this.#shape.get(row));
    this.#seq.clear(row);
    this.#created.clear(row);
  }

  #refShape(queue: string, id: string, from: string, groups: readonly string[]): number {
    const last = this.#lastShape;
    if (last !== null && last.queue === queue && last.id === id && last.from === from && sameGroups(last.groups, groups)) return this.#shapes.refAgain(this.#lastRef);
    const shape: Shape = { queue, id, from, groups };
    const ref = this.#shapes.ref(`${queue}\0${id}\0${from}\0${setKey(groups)}`, shape);
    this.#lastShape = this.#shapes.value(ref);
    this.#lastRef = ref;
    return ref;
  }

  #unrefShape(ref: number): void {
    if (this.#shapes.unref(ref) && ref === this.#lastRef) {
      this.#lastShape = null;
      this.#lastRef = -1;
    }
  }

  messageId(row: number): string {
    return this.#slots.idAt(row)!;
  }

  queue(row: number): string {
    return this.#shapes.value(this.#shape.get(row)).queue;
  }

  id(row: number): string {
    return this.#shapes.value(this.#shape.get(row)).id;
  }

  seq(row: number): number {
    return this.#seq.get(row);
  }

  created(row: number): number {
    return this.#created.get(row);
  }

  from(row: number): string {
    return this.#shapes.value(this.#shape.get(row)).from;
  }

  acceptedAt(row: number): number {
    return this.#slots.shared(row);
  }

  /** keys of the groups the message is not settled in; empty: it waits for a subscriber */
  groups(row: number): readonly string[] {
    return this.#shapes.value(this.#shape.get(row)).groups;
  }

  setGroups(row: number, groups: readonly string[]): void {
    const old = this.#shape.get(row);
    const shape = this.#shapes.value(old);
    this.#shape.set(row, this.#refShape(shape.queue, shape.id, shape.from, groups));
    this.#unrefShape(old);
  }

  inFlight(row: number): number {
    return this.#inFlight.get(row);
  }

  addInFlight(row: number, delta: number): void {
    this.#inFlight.set(row, this.#inFlight.get(row) + delta);
  }

  /** not yet delivered to every group: it waits for a subscriber, or some group has it ready or delayed */
  isWaiting(row: number): boolean {
    const groups = this.groups(row).length;
    return groups === 0 || groups > this.#inFlight.get(row);
  }

  /** the row's ring position modulo 2^32 (row-ring.ts finds its slot from it) */
  position32(row: number): number {
    return this.#position.get(row);
  }

  setPosition(row: number, position: number): void {
    this.#position.set(row, position % POSITION_WRAP);
  }

  /** the message as it was stored, with the body given (undefined: on disk only) */
  message(row: number, data: unknown, json?: string): StoredMessage {
    return {
      seq: this.#seq.get(row),
      messageId: this.#slots.idAt(row)!,
      queue: this.queue(row),
      id: this.id(row),
      data,
      created: this.#created.get(row),
      acceptedAt: this.#slots.shared(row),
      from: this.from(row),
      json,
    };
  }
}

const POSITION_WRAP = 2 ** 32;

/** the rows' bit in their slots' holders (the store's index has another, log-index.ts) */
const ROWS = 2;

/** what rows have in common: one object per distinct combination, not per row */
interface Shape {
  readonly queue: string;
  readonly id: string;
  readonly from: string;
  readonly groups: readonly string[];
}

function sameGroups(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** group keys never hold a NUL (they are made of channel ids and client names) */
function setKey(groups: readonly string[]): string {
  return groups.length === 1 ? groups[0]! : groups.join('\0');
}
