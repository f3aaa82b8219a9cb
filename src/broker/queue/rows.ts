import { IdSlots } from '../../protocol/id-slots.js';
import { Float64Pages, Uint16Pages, Uint32Pages } from '../../protocol/paged.js';
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
 * its index keeps its columns by the same slots, so an id is kept once). Strings that repeat (queue names, ids, senders, sets of group
 * keys) are interned with a count of the rows naming them.
 */
export class MessageRows {
  /** message id -> row; shared with the store's index, each holding its slots with its own bit */
  readonly #slots: IdSlots;
  #count = 0;
  // columns grow a page at a time (paged.ts): a million rows are never copied in one turn
  readonly #queue = new Uint32Pages();
  readonly #id = new Uint32Pages();
  readonly #from = new Uint32Pages();
  /** interned set of the keys of the groups the message is not settled in; empty: it waits for a subscriber */
  readonly #groups = new Uint32Pages();
  /** of those groups, how many have it in flight */
  readonly #inFlight = new Uint16Pages();
  readonly #seq = new Float64Pages();
  readonly #created = new Float64Pages();
  readonly #acceptedAt = new Float64Pages();
  /** where the row is in its queue's ring (row-ring.ts), modulo 2^32: a ring holds fewer rows than that */
  readonly #position = new Uint32Pages();
  readonly #names = new Interned<string>();
  readonly #groupSets = new Interned<readonly string[]>();

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

  /** the caller knows the message has no row yet (`find`) */
  add(message: StoredMessage, groups: readonly string[]): number {
    const row = this.#slots.hold(message.messageId, ROWS);
    if (row >= this.#seq.capacity) for (const column of [this.#queue, this.#id, this.#from, this.#groups, this.#inFlight, this.#seq, this.#created, this.#acceptedAt, this.#position]) column.ensure(row);
    this.#count++;
    this.#queue.set(row, this.#names.ref(message.queue, message.queue));
    this.#id.set(row, this.#names.ref(message.id, message.id));
    this.#from.set(row, this.#names.ref(message.from, message.from));
    this.#groups.set(row, this.#groupSets.ref(setKey(groups), groups));
    this.#inFlight.set(row, 0);
    this.#seq.set(row, message.seq);
    this.#created.set(row, message.created);
    this.#acceptedAt.set(row, message.acceptedAt);
    return row;
  }

  free(row: number): void {
    this.#slots.release(row, ROWS);
    this.#count--;
    this.#names.unref(this.#queue.get(row));
    this.#names.unref(this.#id.get(row));
    this.#names.unref(this.#from.get(row));
    this.#groupSets.unref(this.#groups.get(row));
  }

  messageId(row: number): string {
    return this.#slots.idAt(row)!;
  }

  queue(row: number): string {
    return this.#names.value(this.#queue.get(row));
  }

  id(row: number): string {
    return this.#names.value(this.#id.get(row));
  }

  seq(row: number): number {
    return this.#seq.get(row);
  }

  created(row: number): number {
    return this.#created.get(row);
  }

  from(row: number): string {
    return this.#names.value(this.#from.get(row));
  }

  acceptedAt(row: number): number {
    return this.#acceptedAt.get(row);
  }

  /** keys of the groups the message is not settled in; empty: it waits for a subscriber */
  groups(row: number): readonly string[] {
    return this.#groupSets.value(this.#groups.get(row));
  }

  setGroups(row: number, groups: readonly string[]): void {
    const old = this.#groups.get(row);
    this.#groups.set(row, this.#groupSets.ref(setKey(groups), groups));
    this.#groupSets.unref(old);
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
      acceptedAt: this.#acceptedAt.get(row),
      from: this.#names.value(this.#from.get(row)),
      json,
    };
  }
}

const POSITION_WRAP = 2 ** 32;

/** the rows' bit in their slots' holders (the store's index has another, log-index.ts) */
const ROWS = 2;

/** group keys never hold a NUL (they are made of channel ids and client names) */
function setKey(groups: readonly string[]): string {
  return groups.length === 1 ? groups[0]! : groups.join('\0');
}

/** values that repeat across rows, each kept once with a count of the rows naming it */
class Interned<T> {
  readonly #refs = new Map<string, number>();
  #keys: (string | undefined)[] = [];
  #values: (T | undefined)[] = [];
  #counts: number[] = [];
  #free: number[] = [];

  ref(key: string, value: T): number {
    let ref = this.#refs.get(key);
    if (ref === undefined) {
      ref = this.#free.pop() ?? this.#keys.length;
      this.#keys[ref] = key;
      this.#values[ref] = value;
      this.#counts[ref] = 0;
      this.#refs.set(key, ref);
    }
    this.#counts[ref]!++;
    return ref;
  }

  unref(ref: number): void {
    if (--this.#counts[ref]! > 0) return;
    this.#refs.delete(this.#keys[ref]!);
    this.#keys[ref] = undefined;
    this.#values[ref] = undefined;
    this.#free.push(ref);
  }

  value(ref: number): T {
    return this.#values[ref]!;
  }
}
