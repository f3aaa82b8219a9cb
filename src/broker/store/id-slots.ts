/**
 * Message ids and the slot number each has in its owner's columns (the store's live index, a
 * queue's cold rows): open addressing over an Int32Array, 4 bytes a table slot kept 1/4 to 3/4
 * full, plus the id's hash per slot, where a Map costs about 40 bytes a key (bounded memory,
 * SPEC §7: a million waiting messages are a million ids). Slots freed are used again first, so
 * the slots in use stay dense and the owner's columns grow only with the live count.
 */
export class IdSlots {
  #ids: (string | undefined)[] = [];
  /** hash of the slot's id (a rehash does not hash the strings again) */
  #hash = new Uint32Array(1024);
  /** id -> slot: linear probing; EMPTY ends a probe, GONE (a freed slot) does not */
  #table = new Int32Array(1024).fill(EMPTY);
  /** table entries not EMPTY (slots and GONE marks) */
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
    const table = this.#table;
    const mask = table.length - 1;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const slot = table[i]!;
      if (slot === EMPTY) return -1;
      if (slot >= 0 && this.#hash[slot] === hash && this.#ids[slot] === id) return slot;
    }
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
    this.#insert(slot);
    return slot;
  }

  remove(slot: number): void {
    const table = this.#table;
    const mask = table.length - 1;
    let i = this.#hash[slot]! & mask;
    while (table[i] !== slot) i = (i + 1) & mask;
    table[i] = GONE;
    this.#ids[slot] = undefined;
    this.#free.push(slot);
    this.#live--;
  }

  #insert(slot: number): void {
    // at most 3/4 full (GONE marks count): a probe stays short with linear probing
    if ((this.#used + 1) * 4 > this.#table.length * 3) return this.#rehash();
    const table = this.#table;
    const mask = table.length - 1;
    let i = this.#hash[slot]! & mask;
    while (table[i]! >= 0) i = (i + 1) & mask;
    if (table[i] === EMPTY) this.#used++;
    table[i] = slot;
  }

  /** a table at most half full of the live slots (GONE marks dropped), at least as large as before */
  #rehash(): void {
    let size = this.#table.length;
    while (this.#live * 2 > size) size *= 2;
    const table = new Int32Array(size).fill(EMPTY);
    const mask = size - 1;
    for (let slot = 0; slot < this.#ids.length; slot++) {
      if (this.#ids[slot] === undefined) continue;
      let i = this.#hash[slot]! & mask;
      while (table[i] !== EMPTY) i = (i + 1) & mask;
      table[i] = slot;
    }
    this.#table = table;
    this.#used = this.#live;
  }
}

const EMPTY = -1;
const GONE = -2;

/** FNV-1a over the UTF-16 code units */
function hashOf(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}
