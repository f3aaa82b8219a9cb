/**
 * Message ids and the slot number each has in its owner's columns (the store's live index, a
 * queue's cold rows, the dedupe window): open addressing over an Int32Array, 4 bytes a table
 * entry kept 1/4 to 3/4 full, plus the id's hash per slot, where a Map costs about 40 bytes a key
 * (bounded memory, SPEC §7: a million waiting messages are a million ids). Slots freed are used
 * again first, so the slots in use stay dense and the owner's columns grow only with the live
 * count. A full table is not rebuilt in one go (28 ms at a million ids): a bigger one takes the
 * new ids and every change moves a few entries of the old one over, until it is empty.
 */
export class IdSlots {
  #ids: (string | undefined)[] = [];
  /** hash of the slot's id (moving an entry does not hash the string again) */
  #hash = new Uint32Array(1024);
  /** id -> slot + 1: linear probing; EMPTY (0) ends a probe, GONE does not */
  #table = new Int32Array(1024);
  /** the table being emptied into `#table` (entries not moved yet), null when none */
  #old: Int32Array | null = null;
  #oldCursor = 0;
  /** `#table` entries not EMPTY (slots and GONE marks) */
  #used = 0;
  #live = 0;
  readonly #free: number[] = [];

  /** ids with a slot */
  get size(): number {
    return this.#live;
  }

  /** slots made so far, in use or free: every slot number is below it */
  get length(): number {
    return this.#ids.length;
  }

  /** the slot of an id, -1 when it has none */
  find(id: string): number {
    const hash = hashOf(id);
    const slot = this.#probe(this.#table, hash, id);
    return slot >= 0 || this.#old === null ? slot : this.#probe(this.#old, hash, id);
  }

  /** the id in a slot; undefined: the slot is free */
  idAt(slot: number): string | undefined {
    return this.#ids[slot];
  }

  /** the caller knows the id has no slot (`find`); a freed slot is used again first */
  add(id: string): number {
    let slot = this.#free.pop();
    if (slot === undefined) {
      slot = this.#ids.length;
      if (slot === this.#hash.length) {
        const hash = new Uint32Array(slot * 2);
        hash.set(this.#hash);
        this.#hash = hash;
      }
      this.#ids.push(id);
    } else {
      this.#ids[slot] = id;
    }
    this.#hash[slot] = hashOf(id);
    this.#live++;
    this.#moveSome();
    // at most 3/4 full (GONE marks count): a probe stays short with linear probing
    if ((this.#used + 1) * 4 > this.#table.length * 3) this.#startResize();
    this.#place(this.#table, slot);
    this.#used++;
    return slot;
  }

  remove(slot: number): void {
    if (!this.#unplace(this.#table, slot)) this.#unplace(this.#old!, slot);
    this.#ids[slot] = undefined;
    this.#free.push(slot);
    this.#live--;
    this.#moveSome();
  }

  #probe(table: Int32Array, hash: number, id: string): number {
    const mask = table.length - 1;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const entry = table[i]!;
      if (entry === EMPTY) return -1;
      if (entry > 0 && this.#hash[entry - 1] === hash && this.#ids[entry - 1] === id) return entry - 1;
    }
  }

  /** into the first entry that is not a slot (EMPTY or GONE); the caller counts `#used` for EMPTY */
  #place(table: Int32Array, slot: number): void {
    const mask = table.length - 1;
    let i = this.#hash[slot]! & mask;
    while (table[i]! > 0) i = (i + 1) & mask;
    if (table[i] === GONE) this.#used--; // a GONE mark reused: not a new entry
    table[i] = slot + 1;
  }

  /** false when the slot is not in this table */
  #unplace(table: Int32Array, slot: number): boolean {
    const mask = table.length - 1;
    for (let i = this.#hash[slot]! & mask; ; i = (i + 1) & mask) {
      const entry = table[i]!;
      if (entry === EMPTY) return false;
      if (entry === slot + 1) {
        table[i] = GONE;
        return true;
      }
    }
  }

  /** a table at most half full of the live slots, at least as large; the old one is emptied bit by bit */
  #startResize(): void {
    while (this.#old !== null) this.#moveSome();
    let size = this.#table.length;
    while (this.#live * 2 > size) size *= 2;
    this.#old = this.#table;
    this.#oldCursor = 0;
    this.#table = new Int32Array(size);
    this.#used = 0;
  }

  /** moves the next MOVE_STEP entries of the old table (a new table half full fills in 1/8 of the adds that moving takes) */
  #moveSome(): void {
    const old = this.#old;
    if (old === null) return;
    const end = Math.min(old.length, this.#oldCursor + MOVE_STEP);
    for (let i = this.#oldCursor; i < end; i++) {
      const entry = old[i]!;
      if (entry <= 0) continue;
      // GONE, not EMPTY: a probe in the old table for an entry not moved yet must go past it
      old[i] = GONE;
      this.#place(this.#table, entry - 1);
      this.#used++;
    }
    this.#oldCursor = end;
    if (end === old.length) this.#old = null;
  }
}

const EMPTY = 0;
const GONE = -1;
/** old table entries moved per change while a resize runs */
const MOVE_STEP = 32;

/**
 * FNV-1a over the UTF-16 code units, then murmur3's finaliser: FNV's low bits depend on the low
 * bits of each character only (hex digits '1' and 'a' alike), and the table takes the low bits
 */
function hashOf(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}
