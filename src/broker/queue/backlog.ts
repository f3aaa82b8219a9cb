import { IdSlots } from '../../protocol/id-slots.js';
import type { StoredMessage } from '../store/store.js';

/**
 * Waiting messages far from delivery, as rows of typed columns instead of objects (bounded
 * memory, SPEC §7): a message past a queue's window of `memoryWindow` waiting ones costs a row
 * here (about 80 bytes with its index slot and the ring slot of its queue's ColdList), where a
 * message held as objects costs its StoredMessage, Entry and delivery records (about 300 bytes
 * with their map and list slots). Its body is on disk only; the queue makes the objects again (promotes the
 * row) a batch at a time, in acceptance order, as its groups near it.
 *
 * One Backlog is shared by every queue of a router, with its own index of message ids (IdSlots:
 * a row is the id's slot there, where a Map costs about 40 bytes a key). Strings that
 * repeat (queue names, ids, senders, sets of group keys) are interned with a count of the rows
 * naming them.
 */
export class Backlog {
  #capacity = 1024;
  /** message id -> row */
  readonly #rows = new IdSlots();
  #queue = new Uint32Array(this.#capacity);
  #id = new Uint32Array(this.#capacity);
  #from = new Uint32Array(this.#capacity);
  #groups = new Uint32Array(this.#capacity);
  #seq = new Float64Array(this.#capacity);
  #created = new Float64Array(this.#capacity);
  #acceptedAt = new Float64Array(this.#capacity);
  /** where the row is in its queue's ColdList */
  #position = new Float64Array(this.#capacity);
  readonly #names = new Interned<string>();
  readonly #groupSets = new Interned<readonly string[]>();

  /** rows in use, every queue together */
  get size(): number {
    return this.#rows.size;
  }

  /** the row of a message, -1 when it has none */
  find(messageId: string): number {
    return this.#rows.find(messageId);
  }

  /** the caller knows the message has no row yet (Backlog.find) */
  add(message: StoredMessage, groups: readonly string[]): number {
    const row = this.#rows.add(message.messageId);
    if (row === this.#capacity) this.#grow();
    this.#queue[row] = this.#names.ref(message.queue, message.queue);
    this.#id[row] = this.#names.ref(message.id, message.id);
    this.#from[row] = this.#names.ref(message.from, message.from);
    this.#groups[row] = this.#groupSets.ref(setKey(groups), groups);
    this.#seq[row] = message.seq;
    this.#created[row] = message.created;
    this.#acceptedAt[row] = message.acceptedAt;
    return row;
  }

  free(row: number): void {
    this.#rows.remove(row);
    this.#names.unref(this.#queue[row]!);
    this.#names.unref(this.#id[row]!);
    this.#names.unref(this.#from[row]!);
    this.#groupSets.unref(this.#groups[row]!);
  }

  messageId(row: number): string {
    return this.#rows.idAt(row)!;
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

  acceptedAt(row: number): number {
    return this.#acceptedAt[row]!;
  }

  /** keys of the groups the message still waits in; empty: it waits for a subscriber */
  groups(row: number): readonly string[] {
    return this.#groupSets.value(this.#groups[row]!);
  }

  setGroups(row: number, groups: readonly string[]): void {
    const old = this.#groups[row]!;
    this.#groups[row] = this.#groupSets.ref(setKey(groups), groups);
    this.#groupSets.unref(old);
  }

  position(row: number): number {
    return this.#position[row]!;
  }

  setPosition(row: number, position: number): void {
    this.#position[row] = position;
  }

  /** the message as the queue holds it, its body on disk only (`data` undefined) */
  message(row: number): StoredMessage {
    return {
      seq: this.#seq[row]!,
      messageId: this.#rows.idAt(row)!,
      queue: this.queue(row),
      id: this.id(row),
      data: undefined,
      created: this.#created[row]!,
      acceptedAt: this.#acceptedAt[row]!,
      from: this.#names.value(this.#from[row]!),
    };
  }

  #grow(): void {
    const size = this.#capacity * 2;
    this.#queue = grown(this.#queue, new Uint32Array(size));
    this.#id = grown(this.#id, new Uint32Array(size));
    this.#from = grown(this.#from, new Uint32Array(size));
    this.#groups = grown(this.#groups, new Uint32Array(size));
    this.#seq = grown(this.#seq, new Float64Array(size));
    this.#created = grown(this.#created, new Float64Array(size));
    this.#acceptedAt = grown(this.#acceptedAt, new Float64Array(size));
    this.#position = grown(this.#position, new Float64Array(size));
    this.#capacity = size;
  }
}

function grown<T extends Uint32Array | Float64Array>(old: T, bigger: T): T {
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

/**
 * One queue's rows in acceptance order: a ring of row numbers, a removed row leaves a hole
 * (-1) that the head skips. Positions only grow, so a row's position (kept in the Backlog)
 * finds its slot, and a cursor survives removals and additions.
 */
export class ColdList {
  readonly #backlog: Backlog;
  #ring = new Int32Array(1024);
  /** position of the ring's slot 0 ... */
  #start = 0;
  /** ... positions from #head (first live or hole not yet skipped) to #tail (next free) */
  #head = 0;
  #tail = 0;
  #count = 0;

  constructor(backlog: Backlog) {
    this.#backlog = backlog;
  }

  get size(): number {
    return this.#count;
  }

  /** position of the first row (or of the tail when empty): rows before it were taken */
  get headPosition(): number {
    return this.#head;
  }

  push(row: number): void {
    if (this.#tail - this.#start === this.#ring.length) this.#compact();
    this.#ring[this.#tail - this.#start] = row;
    this.#backlog.setPosition(row, this.#tail);
    this.#tail++;
    this.#count++;
  }

  /** the first row, -1 when none */
  first(): number {
    this.#skipHoles();
    return this.#head < this.#tail ? this.#ring[this.#head - this.#start]! : -1;
  }

  /** takes the first row off (after `first`) */
  shift(): void {
    this.#skipHoles();
    if (this.#head === this.#tail) return;
    this.#head++;
    this.#count--;
  }

  remove(row: number): void {
    const at = this.#backlog.position(row) - this.#start;
    if (at < 0 || this.#ring[at] !== row) return;
    this.#ring[at] = -1;
    this.#count--;
    this.#skipHoles();
  }

  /** the row at or after `position`, and the position after it; null at the end */
  next(position: number): { row: number; position: number } | null {
    for (let p = Math.max(position, this.#head); p < this.#tail; p++) {
      const row = this.#ring[p - this.#start]!;
      if (row >= 0) return { row, position: p + 1 };
    }
    return null;
  }

  *[Symbol.iterator](): IterableIterator<number> {
    for (let p = this.#head; p < this.#tail; p++) {
      const row = this.#ring[p - this.#start]!;
      if (row >= 0) yield row;
    }
  }

  #skipHoles(): void {
    while (this.#head < this.#tail && this.#ring[this.#head - this.#start]! < 0) this.#head++;
    if (this.#head === this.#tail && this.#count === 0) {
      // empty: start again at the ring's beginning (positions keep growing)
      this.#start = this.#head;
    }
  }

  /** drops the taken part; grows when more than half is in use (holes count as in use) */
  #compact(): void {
    const used = this.#tail - this.#head;
    const ring = used * 2 > this.#ring.length ? new Int32Array(this.#ring.length * 2) : this.#ring;
    if (ring === this.#ring) this.#ring.copyWithin(0, this.#head - this.#start, this.#tail - this.#start);
    else ring.set(this.#ring.subarray(this.#head - this.#start, this.#tail - this.#start));
    this.#ring = ring;
    this.#start = this.#head;
  }
}
