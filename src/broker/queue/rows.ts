import { IdSlots } from '../../protocol/id-slots.js';
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
  #capacity = 1024;
  /** message id -> row; shared with the store's index, each holding its slots with its own bit */
  readonly #slots: IdSlots;
  #count = 0;
  #queue = new Uint32Array(this.#capacity);
  #id = new Uint32Array(this.#capacity);
  #from = new Uint32Array(this.#capacity);
  /** interned set of the keys of the groups the message is not settled in; empty: it waits for a subscriber */
  #groups = new Uint32Array(this.#capacity);
  /** of those groups, how many have it in flight */
  #inFlight = new Uint16Array(this.#capacity);
  #seq = new Float64Array(this.#capacity);
  #created = new Float64Array(this.#capacity);
  #acceptedAt = new Float64Array(this.#capacity);
  /** where the row is in its queue's ring (row-ring.ts) */
  #position = new Float64Array(this.#capacity);
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
    while (row >= this.#capacity) this.#grow();
    this.#count++;
    this.#queue[row] = this.#names.ref(message.queue, message.queue);
    this.#id[row] = this.#names.ref(message.id, message.id);
    this.#from[row] = this.#names.ref(message.from, message.from);
    this.#groups[row] = this.#groupSets.ref(setKey(groups), groups);
    this.#inFlight[row] = 0;
    this.#seq[row] = message.seq;
    this.#created[row] = message.created;
    this.#acceptedAt[row] = message.acceptedAt;
    return row;
  }

  free(row: number): void {
    this.#slots.release(row, ROWS);
    this.#count--;
    this.#names.unref(this.#queue[row]!);
    this.#names.unref(this.#id[row]!);
    this.#names.unref(this.#from[row]!);
    this.#groupSets.unref(this.#groups[row]!);
  }

  messageId(row: number): string {
    return this.#slots.idAt(row)!;
  }

  queue(row: number): string {
    return this.#names.value(this.#queue[row]!);
  }

  id(row: number): string {
    return this.#names.value(this.#id[row]!);
  }

  seq(row: number): number {
    return this.#seq[row]!;
  }

  created(row: number): number {
    return this.#created[row]!;
  }

  from(row: number): string {
    return this.#names.value(this.#from[row]!);
  }

  acceptedAt(row: number): number {
    return this.#acceptedAt[row]!;
  }

  /** keys of the groups the message is not settled in; empty: it waits for a subscriber */
  groups(row: number): readonly string[] {
    return this.#groupSets.value(this.#groups[row]!);
  }

  setGroups(row: number, groups: readonly string[]): void {
    const old = this.#groups[row]!;
    this.#groups[row] = this.#groupSets.ref(setKey(groups), groups);
    this.#groupSets.unref(old);
  }

  inFlight(row: number): number {
    return this.#inFlight[row]!;
  }

  addInFlight(row: number, delta: number): void {
    this.#inFlight[row]! += delta;
  }

  /** not yet delivered to every group: it waits for a subscriber, or some group has it ready or delayed */
  isWaiting(row: number): boolean {
    const groups = this.groups(row).length;
    return groups === 0 || groups > this.#inFlight[row]!;
  }

  position(row: number): number {
    return this.#position[row]!;
  }

  setPosition(row: number, position: number): void {
    this.#position[row] = position;
  }

  /** the message as it was stored, with the body given (undefined: on disk only) */
  message(row: number, data: unknown, json?: string): StoredMessage {
    return {
      seq: this.#seq[row]!,
      messageId: this.#slots.idAt(row)!,
      queue: this.queue(row),
      id: this.id(row),
      data,
      created: this.#created[row]!,
      acceptedAt: this.#acceptedAt[row]!,
      from: this.#names.value(this.#from[row]!),
      json,
    };
  }

  #grow(): void {
    const size = this.#capacity * 2;
    this.#queue = grown(this.#queue, new Uint32Array(size));
    this.#id = grown(this.#id, new Uint32Array(size));
    this.#from = grown(this.#from, new Uint32Array(size));
    this.#groups = grown(this.#groups, new Uint32Array(size));
    this.#inFlight = grown(this.#inFlight, new Uint16Array(size));
    this.#seq = grown(this.#seq, new Float64Array(size));
    this.#created = grown(this.#created, new Float64Array(size));
    this.#acceptedAt = grown(this.#acceptedAt, new Float64Array(size));
    this.#position = grown(this.#position, new Float64Array(size));
    this.#capacity = size;
  }
}

/** the rows' bit in their slots' holders (the store's index has another, log-index.ts) */
const ROWS = 2;

function grown<T extends Uint32Array | Uint16Array | Float64Array>(old: T, bigger: T): T {
  bigger.set(old);
  return bigger;
}

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
