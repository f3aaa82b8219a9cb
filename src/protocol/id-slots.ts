import { DeltaPages } from './paged.js';

/**
 * Message ids and the slot number each has in its owner's columns (the store's live index, the
 * router's rows, the dedupe window): open addressing over an Int32Array, 4 bytes a table entry
 * kept at most 3/4 full, half full after it grew by half (an id's hash is made again from its cells when an entry moves, not kept
 * per slot; 7 bits of it share the entry with the slot number, so a probe reads another id's
 * cells only when its tag matches), where a Map costs about 40 bytes a key
 * (bounded memory, SPEC §7: a million waiting messages are a million ids). Slots freed are used
 * again first, so the slots in use stay dense and the owner's columns grow only with the live
 * count. A full table is not rebuilt in one go (28 ms at a million ids): a bigger one takes the
 * new ids and every change moves a few entries of the old one over, until it is empty. The
 * columns by slot grow a page at a time (PAGE slots), never by copying, and the free slots are a
 * list threaded through their cells: no structure here copies a million entries in one turn
 * (a doubling of the columns, or of a free list pushed to a million, took 20-40 ms while a broker
 * drained a backlog of a million).
 *
 * The ids themselves are bytes in one arena, 16 per slot, not a string each (a 32-character id
 * string is 48 bytes of heap and an object the garbage collector traces): lowercase hex of up to
 * 32 characters (what the client makes, message-ids.ts) and UUIDs packed two digits a byte, other
 * one-byte ids of up to 16 characters as they are; any other id is kept as a string aside.
 * `idAt` makes the string again when asked.
 *
 * One IdSlots may serve several owners keyed by the same slots (the durable store's index and the
 * router's rows: one id map, one copy of each id): each `hold`s an id with its own bit and
 * `release`s it; the slot is freed when no owner holds it. `add`/`remove` serve a sole owner.
 *
 * Why this file is long: the table, its incremental growth and the arena's four id encodings are
 * one structure whose invariants (a slot's kind, holders and cells change together) no split keeps.
 */
export class IdSlots {
  /** per slot, a number its holders share (the broker: the message's acceptance time), made as used */
  readonly #shared = new DeltaPages();
  /** slots made so far */
  #length = 0;
  /** slots the pages hold: the first page doubles from FIRST_PAGE up to PAGE, then pages are added */
  #capacity = FIRST_PAGE;
  /**
   * per slot, by page, one byte: how its id is kept (the low bits, KIND_MASK: FREE, OTHER, UUID,
   * HEX + bytes, LATIN1 + characters) and the owners holding it (`hold`, a bit each, from
   * HOLDER_SHIFT up): one byte a slot where a byte each took two
   */
  readonly #kind: Uint8Array[] = [new Uint8Array(FIRST_PAGE)];
  /** per slot, by page: the id's 16 bytes as four words (zero-padded); of a free slot, the first word names the next free one */
  readonly #cells: Uint32Array[] = [new Uint32Array(FIRST_PAGE * WORDS)];
  /** ids that do not fit a cell, by slot */
  readonly #others = new Map<number, string>();
  /**
   * id -> slot + 1 in the low bits, and in the bits `#tagMask` selects 7 bits of the id's hash
   * (TAG_MASK; none past `#taggedSlots`): a probe passes an entry of another id by its tag, without
   * reading that id's cells. Linear probing; EMPTY (0) ends a probe, GONE does not
   */
  #table = new Int32Array(TABLE_STEP);
  #tagMask = TAG_MASK;
  /** the table being emptied into `#table` (entries not moved yet), null when none, and its tag bits */
  #old: Int32Array | null = null;
  #oldTagMask = TAG_MASK;
  /** slot numbers from this one on do not fit beside a tag: tables made after one is used have no tags */
  readonly #taggedSlots: number;
  #oldCursor = 0;
  /** `#table` entries not EMPTY (slots and GONE marks) */
  #used = 0;
  #live = 0;
  /** the free slot to use first, NONE when none; each free slot's first cell word names the next */
  #free = NONE;

  /** `taggedSlots`: only tests give it, to reach tables without tags without 16 million ids */
  constructor(taggedSlots = TAGGED_SLOTS) {
    this.#taggedSlots = Math.min(taggedSlots, TAGGED_SLOTS);
  }

  /** ids with a slot */
  get size(): number {
    return this.#live;
  }

  /** slots made so far, in use or free: every slot number is below it */
  get length(): number {
    return this.#length;
  }

  /** the slot of an id, -1 when it has none */
  find(id: string): number {
    const kind = encode(id);
    return this.#find(kind, kind === OTHER ? hashOf(id) : hashOfScratch(kind), id);
  }

  /** `kind` and SCRATCH: the id as `encode` left it */
  #find(kind: number, hash: number, id: string): number {
    const slot = this.#probe(this.#table, this.#tagMask, hash, kind, id);
    return slot >= 0 || this.#old === null ? slot : this.#probe(this.#old, this.#oldTagMask, hash, kind, id);
  }

  /** the slot holds an id (no string made) */
  has(slot: number): boolean {
    return slot < this.#length && (this.#kind[slot >>> PAGE_BITS]![slot & PAGE_MASK]! & KIND_MASK) !== FREE;
  }

  /** owners' bits taken (`claim`) */
  #claimed = 0;

  /** `holder`'s bit is this owner's alone: a second owner with it would read the first's slots as its own */
  claim(holder: number): void {
    if ((this.#claimed & holder) !== 0) throw new Error(`IdSlots: holder ${holder} already has an owner`);
    if (holder < 1 || holder > MAX_HOLDER) throw new Error(`IdSlots: holder ${holder} is not one of the bits 1 to ${MAX_HOLDER}`);
    this.#claimed |= holder;
  }

  /** the slot of an id for `holder` (a bit), made if the id has none */
  hold(id: string, holder: number): number {
    const kind = encode(id);
    const hash = kind === OTHER ? hashOf(id) : hashOfScratch(kind);
    let slot = this.#find(kind, hash, id);
    if (slot < 0) slot = this.#add(kind, hash, id);
    this.#kind[slot >>> PAGE_BITS]![slot & PAGE_MASK]! |= holder << HOLDER_SHIFT;
    return slot;
  }

  /** as `hold`, but -1 when `holder` holds the id already (one find where `find` then `hold` took two) */
  holdNew(id: string, holder: number): number {
    const kind = encode(id);
    const hash = kind === OTHER ? hashOf(id) : hashOfScratch(kind);
    let slot = this.#find(kind, hash, id);
    if (slot < 0) slot = this.#add(kind, hash, id);
    else if (((this.#kind[slot >>> PAGE_BITS]![slot & PAGE_MASK]! >>> HOLDER_SHIFT) & holder) !== 0) return -1;
    this.#kind[slot >>> PAGE_BITS]![slot & PAGE_MASK]! |= holder << HOLDER_SHIFT;
    return slot;
  }

  /** `holder` holds the slot */
  holds(slot: number, holder: number): boolean {
    return slot < this.#length && ((this.#kind[slot >>> PAGE_BITS]![slot & PAGE_MASK]! >>> HOLDER_SHIFT) & holder) !== 0;
  }

  /** a holder other than `holder` holds the slot */
  heldByOther(slot: number, holder: number): boolean {
    return slot < this.#length && ((this.#kind[slot >>> PAGE_BITS]![slot & PAGE_MASK]! >>> HOLDER_SHIFT) & ~holder) !== 0;
  }

  /** `holder` lets the slot go; freed when no holder is left */
  release(slot: number, holder: number): void {
    const bytes = this.#kind[slot >>> PAGE_BITS]!;
    const byte = bytes[slot & PAGE_MASK]!;
    const left = (byte >>> HOLDER_SHIFT) & ~holder;
    bytes[slot & PAGE_MASK] = (byte & KIND_MASK) | (left << HOLDER_SHIFT);
    if (left === 0) this.remove(slot);
  }

  /** the number the slot's holders share (`setShared`), 0 when none was set */
  shared(slot: number): number {
    return slot < this.#shared.capacity ? this.#shared.get(slot) : 0;
  }

  /** sets the number every holder of the slot reads (they hold one id: one message, one value) */
  setShared(slot: number, value: number): void {
    if (slot >= this.#shared.capacity) this.#shared.ensure(slot);
    this.#shared.set(slot, value);
  }

  /** the slot holds this id (no string made, no probe) */
  holdsId(slot: number, id: string): boolean {
    if (!this.has(slot)) return false;
    const kind = encode(id);
    const page = slot >>> PAGE_BITS;
    const at = slot & PAGE_MASK;
    return (this.#kind[page]![at]! & KIND_MASK) === kind && this.#same(slot, page, at, kind, id);
  }

  /** the id in a slot, a string made from its bytes; undefined: the slot is free */
  idAt(slot: number): string | undefined {
    const kind = slot < this.#length ? this.#kind[slot >>> PAGE_BITS]![slot & PAGE_MASK]! & KIND_MASK : FREE;
    if (kind === FREE) return undefined;
    if (kind === OTHER) return this.#others.get(slot);
    return decode(this.#cells[slot >>> PAGE_BITS]!, slot & PAGE_MASK, kind);
  }

  /** the caller knows the id has no slot (`find`); a freed slot is used again first */
  add(id: string): number {
    const kind = encode(id);
    return this.#add(kind, kind === OTHER ? hashOf(id) : hashOfScratch(kind), id);
  }

  /** `kind` and SCRATCH: the id as `encode` left it */
  #add(kind: number, hash: number, id: string): number {
    let slot = this.#free;
    if (slot !== NONE) {
      this.#free = this.#cells[slot >>> PAGE_BITS]![(slot & PAGE_MASK) * WORDS]!;
    } else {
      slot = this.#length++;
      if (slot === this.#capacity) this.#grow();
    }
    const page = slot >>> PAGE_BITS;
    const at = slot & PAGE_MASK;
    this.#kind[page]![at] = kind;
    if (kind === OTHER) this.#others.set(slot, id);
    else {
      const cells = this.#cells[page]!;
      const w = at * WORDS;
      cells[w] = SCRATCH[0]!;
      cells[w + 1] = SCRATCH[1]!;
      cells[w + 2] = SCRATCH[2]!;
      cells[w + 3] = SCRATCH[3]!;
    }
    this.#live++;
    this.#moveSome();
    // at most 3/4 full (GONE marks count): a probe stays short with linear probing
    if ((this.#used + 1) * 4 > this.#table.length * 3) this.#startResize(this.#tagMask);
    // a slot number that leaves no room for a tag: from now on, tables without (once in a
    // lifetime, at 16.7 million ids: a resize under way then finishes in this turn)
    if (slot >= this.#taggedSlots && this.#tagMask !== 0) this.#startResize(0);
    this.#place(this.#table, this.#tagMask, slot, hash);
    this.#used++;
    return slot;
  }

  remove(slot: number): void {
    const hash = this.#hashOfSlot(slot);
    if (!this.#unplace(this.#table, this.#tagMask, slot, hash)) this.#unplace(this.#old!, this.#oldTagMask, slot, hash);
    const page = slot >>> PAGE_BITS;
    const at = slot & PAGE_MASK;
    if ((this.#kind[page]![at]! & KIND_MASK) === OTHER) this.#others.delete(slot);
    // its holders with it
    this.#kind[page]![at] = FREE;
    // the free list: the last freed comes back first
    this.#cells[page]![at * WORDS] = this.#free;
    if (slot < this.#shared.capacity) this.#shared.clear(slot);
    this.#free = slot;
    this.#live--;
    this.#moveSome();
  }

  /** `kind` and SCRATCH: the id as `encode` left it; `tagMask`: the table's tag bits */
  #probe(table: Int32Array, tagMask: number, hash: number, kind: number, id: string): number {
    const size = table.length;
    const tag = tagOf(hash) & tagMask;
    const slotMask = ~tagMask;
    for (let i = homeOf(hash, size); ; i = i + 1 === size ? 0 : i + 1) {
      const entry = table[i]!;
      if (entry === EMPTY) return -1;
      // GONE, or another id's entry told by its tag
      if (entry <= 0 || (entry & tagMask) !== tag) continue;
      const slot = (entry & slotMask) - 1;
      const page = slot >>> PAGE_BITS;
      const at = slot & PAGE_MASK;
      if ((this.#kind[page]![at]! & KIND_MASK) === kind && this.#same(slot, page, at, kind, id)) return slot;
    }
  }

  #same(slot: number, page: number, at: number, kind: number, id: string): boolean {
    if (kind === OTHER) return this.#others.get(slot) === id;
    const cells = this.#cells[page]!;
    const w = at * WORDS;
    return cells[w] === SCRATCH[0] && cells[w + 1] === SCRATCH[1] && cells[w + 2] === SCRATCH[2] && cells[w + 3] === SCRATCH[3];
  }

  /** room for one more slot: the first page doubles up to PAGE slots, then a page is added (nothing large is copied) */
  #grow(): void {
    if (this.#capacity < PAGE) {
      const size = this.#capacity * 2;
      this.#kind[0] = grown(this.#kind[0]!, new Uint8Array(size));
      this.#cells[0] = grown(this.#cells[0]!, new Uint32Array(size * WORDS));
      this.#capacity = size;
      return;
    }
    this.#kind.push(new Uint8Array(PAGE));
    this.#cells.push(new Uint32Array(PAGE * WORDS));
    this.#capacity += PAGE;
  }

  /** the slot's hash made again from its cells (not kept: 4 bytes a slot), or its string for one kept aside */
  #hashOfSlot(slot: number): number {
    const page = slot >>> PAGE_BITS;
    const at = slot & PAGE_MASK;
    const kind = this.#kind[page]![at]! & KIND_MASK;
    if (kind === OTHER) return hashOf(this.#others.get(slot)!);
    const cells = this.#cells[page]!;
    const w = at * WORDS;
    return hashOfWords(kind, cells[w]!, cells[w + 1]!, cells[w + 2]!, cells[w + 3]!);
  }

  /** into the first entry that is not a slot (EMPTY or GONE); the caller counts `#used` for EMPTY */
  #place(table: Int32Array, tagMask: number, slot: number, hash: number): void {
    const size = table.length;
    let i = homeOf(hash, size);
    while (table[i]! > 0) i = i + 1 === size ? 0 : i + 1;
    if (table[i] === GONE) this.#used--; // a GONE mark reused: not a new entry
    table[i] = (tagOf(hash) & tagMask) | (slot + 1);
  }

  /** false when the slot is not in this table */
  #unplace(table: Int32Array, tagMask: number, slot: number, hash: number): boolean {
    const size = table.length;
    const wanted = (tagOf(hash) & tagMask) | (slot + 1);
    for (let i = homeOf(hash, size); ; i = i + 1 === size ? 0 : i + 1) {
      const entry = table[i]!;
      if (entry === EMPTY) return false;
      if (entry === wanted) {
        table[i] = GONE;
        return true;
      }
    }
  }

  /**
   * a table half full of the live slots (a multiple of TABLE_STEP entries, at least as large as
   * this one), with `tagMask`'s tags; the old one is emptied bit by bit. Not a power of two: at 3/4
   * full a table grows by half (a million ids: a table of 1.5 million entries, 6 B an id, where
   * doubling made 2^21, 8.4 B)
   */
  #startResize(tagMask: number): void {
    while (this.#old !== null) this.#moveSome();
    const size = Math.max(this.#table.length, Math.ceil((this.#live * 2) / TABLE_STEP) * TABLE_STEP);
    this.#old = this.#table;
    this.#oldTagMask = this.#tagMask;
    this.#oldCursor = 0;
    this.#table = new Int32Array(size);
    this.#tagMask = tagMask;
    this.#used = 0;
  }

  /** moves the next MOVE_STEP entries of the old table (a new table half full fills in 1/8 of the adds that moving takes) */
  #moveSome(): void {
    const old = this.#old;
    if (old === null) return;
    const end = Math.min(old.length, this.#oldCursor + MOVE_STEP);
    const slotMask = ~this.#oldTagMask;
    for (let i = this.#oldCursor; i < end; i++) {
      const entry = old[i]!;
      if (entry <= 0) continue;
      // GONE, not EMPTY: a probe in the old table for an entry not moved yet must go past it
      old[i] = GONE;
      const slot = (entry & slotMask) - 1;
      this.#place(this.#table, this.#tagMask, slot, this.#hashOfSlot(slot));
      this.#used++;
    }
    this.#oldCursor = end;
    if (end === old.length) this.#old = null;
  }
}

/**
 * Ids in a list, appended and read by index, kept as IdSlots keeps them (16 bytes a cell, not a
 * string each), each with a number beside it (`push`'s `at`): the store's ids removed within the
 * dedupe window and their acceptance times (log-index.ts), a million at 10,000 msg/s, that would
 * otherwise be a million strings the garbage collector keeps moving. Pages of PAGE ids, never
 * copied: `slice` shares them with the list it came from, which stays readable as it was (a
 * snapshot under way reads it), so neither grows nor prunes copy a million cells in one turn.
 */
export class IdList {
  #length = 0;
  /** where index 0 is in the pages (a slice starts inside its first page) */
  #base = 0;
  /** capacity of the pages: the first one doubles up to PAGE while it is the only one */
  #capacity = FIRST_PAGE;
  #kind: Uint8Array[] = [new Uint8Array(FIRST_PAGE)];
  #cells: Uint32Array[] = [new Uint32Array(FIRST_PAGE * WORDS)];
  #at: Float64Array[] = [new Float64Array(FIRST_PAGE)];
  readonly #others = new Map<number, string>();

  get length(): number {
    return this.#length;
  }

  /** appends an id with a number (the store: its acceptance time) */
  push(id: string, at = 0): void {
    const position = this.#base + this.#length++;
    if (position === this.#capacity) this.#grow();
    const page = position >>> PAGE_BITS;
    const i = position & PAGE_MASK;
    const kind = encode(id);
    this.#kind[page]![i] = kind;
    this.#at[page]![i] = at;
    if (kind === OTHER) this.#others.set(position, id);
    else this.#cells[page]!.set(SCRATCH, i * WORDS);
  }

  #grow(): void {
    if (this.#capacity < PAGE && this.#kind.length === 1) {
      // the only page: a copy of its own (a list sliced from this one keeps reading the old page)
      const size = this.#capacity * 2;
      this.#kind = [grown(this.#kind[0]!, new Uint8Array(size))];
      this.#cells = [grown(this.#cells[0]!, new Uint32Array(size * WORDS))];
      this.#at = [grown(this.#at[0]!, new Float64Array(size))];
      this.#capacity = size;
      return;
    }
    // a new pages array: one shared with another list is never pushed onto
    this.#kind = [...this.#kind, new Uint8Array(PAGE)];
    this.#cells = [...this.#cells, new Uint32Array(PAGE * WORDS)];
    this.#at = [...this.#at, new Float64Array(PAGE)];
    this.#capacity = (this.#kind.length - 1) * PAGE + PAGE;
  }

  at(index: number): string {
    const position = this.#base + index;
    const kind = this.#kind[position >>> PAGE_BITS]![position & PAGE_MASK]!;
    return kind === OTHER ? this.#others.get(position)! : decode(this.#cells[position >>> PAGE_BITS]!, position & PAGE_MASK, kind);
  }

  /** the number pushed with the id */
  numberAt(index: number): number {
    const position = this.#base + index;
    return this.#at[position >>> PAGE_BITS]![position & PAGE_MASK]!;
  }

  /** the id's length in characters (no string made) */
  lengthAt(index: number): number {
    const position = this.#base + index;
    const kind = this.#kind[position >>> PAGE_BITS]![position & PAGE_MASK]!;
    if (kind === OTHER) return this.#others.get(position)!.length;
    if (kind === UUID) return 36;
    return kind > HEX ? (kind - HEX) * 2 : kind - LATIN1;
  }

  /**
   * A new list of the ids from `from` on. It shares this one's pages from the one holding `from`
   * (nothing copied but the page list); this one is left as it is, and is not to be pushed onto
   * any more (the new list writes past its end, in a page they may share).
   */
  slice(from: number): IdList {
    const list = new IdList();
    const start = this.#base + from;
    const first = start >>> PAGE_BITS;
    list.#kind = this.#kind.slice(first);
    list.#cells = this.#cells.slice(first);
    list.#at = this.#at.slice(first);
    list.#base = start & PAGE_MASK;
    list.#length = this.#length - from;
    list.#capacity = this.#capacity - first * PAGE;
    const shift = first * PAGE;
    for (const [position, id] of this.#others) if (position >= start && position < this.#base + this.#length) list.#others.set(position - shift, id);
    return list;
  }
}

/**
 * A Buffer over each page of cells, made once: a Buffer made per decode was ~100 bytes of garbage
 * for every id read (a drain reads a message's id several times)
 */
const pageBytes = new WeakMap<Uint32Array, Buffer>();

/** the id of cell `index` of a kind other than FREE and OTHER */
function decode(cells: Uint32Array, index: number, kind: number): string {
  let bytes = pageBytes.get(cells);
  if (bytes === undefined) pageBytes.set(cells, (bytes = Buffer.from(cells.buffer, cells.byteOffset, cells.byteLength)));
  const at = index * CELL;
  if (kind === UUID) {
    const hex = bytes.toString('hex', at, at + CELL);
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }
  if (kind > HEX) return bytes.toString('hex', at, at + kind - HEX);
  return bytes.toString('latin1', at, at + kind - LATIN1);
}

/** bytes and words of an id's cell */
const CELL = 16;
const WORDS = CELL / 4;
/** slot kinds: free, an id kept aside as a string, a UUID; LATIN1 + n: n one-byte characters; HEX + n: n bytes of lowercase hex */
const FREE = 0;
const OTHER = 1;
const UUID = 2;
const LATIN1 = 3;
const HEX = LATIN1 + CELL + 1;
/** an IdSlots slot's byte: its kind in the low 6 bits (HEX + CELL, the largest, is 36), its holders' bits above */
const KIND_MASK = 0x3f;
const HOLDER_SHIFT = 6;
const MAX_HOLDER = 0xff >>> HOLDER_SHIFT;
/** the id being found or added, as `encode` packed it (one id at a time: nothing here awaits) */
const SCRATCH_BYTES = new Uint8Array(CELL);
/** the same bytes, compared a word at a time */
const SCRATCH = new Uint32Array(SCRATCH_BYTES.buffer);

/** packs an id into SCRATCH, returns its kind (one kind per string: equal ids have equal cells) */
function encode(id: string): number {
  const length = id.length;
  // what clients make (message-ids.ts): four words straight from the characters
  if (length === CELL * 2 && LITTLE_ENDIAN && packHexWords(id)) return HEX + CELL;
  clearScratch();
  if (length <= CELL * 2 && length % 2 === 0 && length > 0 && packHex(id, 0, length, 0)) return HEX + length / 2;
  if (length === 36 && isUuid(id)) return UUID;
  clearScratch();
  if (length > CELL) return OTHER;
  for (let i = 0; i < length; i++) {
    const c = id.charCodeAt(i);
    if (c > 0xff) return OTHER;
    SCRATCH_BYTES[i] = c;
  }
  return LATIN1 + length;
}

/** a UUID's 32 digits, lowercase, dashes at 8, 13, 18 and 23 */
function isUuid(id: string): boolean {
  if (id.charCodeAt(8) !== DASH || id.charCodeAt(13) !== DASH || id.charCodeAt(18) !== DASH || id.charCodeAt(23) !== DASH) return false;
  clearScratch();
  return packHex(id, 0, 8, 0) && packHex(id, 9, 13, 4) && packHex(id, 14, 18, 6) && packHex(id, 19, 23, 8) && packHex(id, 24, 36, 10);
}

/** characters from..to of `id` (lowercase hex, an even count) into SCRATCH from byte `at`; false when not hex */
function packHex(id: string, from: number, to: number, at: number): boolean {
  for (let i = from; i < to; i += 2, at++) {
    const high = digit(id.charCodeAt(i));
    const low = digit(id.charCodeAt(i + 1));
    if ((high | low) < 0) return false;
    SCRATCH_BYTES[at] = (high << 4) | low;
  }
  return true;
}

/** a character's value as a lowercase hex digit, -1 when it is not one: a look-up, not branches a random id mispredicts (3x slower) */
function digit(c: number): number {
  return DIGITS[c]!;
}

/** by UTF-16 code unit (charCodeAt is below 2^16) */
const DIGITS = new Int8Array(0x10000).fill(-1);
for (let c = 0; c < 16; c++) DIGITS[c.toString(16).charCodeAt(0)] = c;

function clearScratch(): void {
  SCRATCH[0] = 0;
  SCRATCH[1] = 0;
  SCRATCH[2] = 0;
  SCRATCH[3] = 0;
}

/** 32 lowercase hex characters into SCRATCH's four words, the bytes as packHex puts them (little-endian); false when not hex */
function packHexWords(id: string): boolean {
  for (let w = 0, i = 0; w < WORDS; w++, i += 8) {
    const b0 = (digit(id.charCodeAt(i)) << 4) | digit(id.charCodeAt(i + 1));
    const b1 = (digit(id.charCodeAt(i + 2)) << 4) | digit(id.charCodeAt(i + 3));
    const b2 = (digit(id.charCodeAt(i + 4)) << 4) | digit(id.charCodeAt(i + 5));
    const b3 = (digit(id.charCodeAt(i + 6)) << 4) | digit(id.charCodeAt(i + 7));
    // a -1 digit makes its byte negative or past 0xff
    if (((b0 | b1 | b2 | b3) & ~0xff) !== 0) return false;
    SCRATCH[w] = b0 | (b1 << 8) | (b2 << 16) | (b3 << 24);
  }
  return true;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

const DASH = 45;
/** slots a page of the columns holds; the first page starts at FIRST_PAGE and doubles up to it */
const PAGE_BITS = 14;
const PAGE = 1 << PAGE_BITS;
const PAGE_MASK = PAGE - 1;
const FIRST_PAGE = 1024;
/** no free slot */
const NONE = 0xffffffff;
/** a table entry's tag bits (bits 24-30: slot + 1 in the 24 below, the sign bit clear) and the slots that fit below them */
const TAG_MASK = 0x7f000000;
const TAGGED_SLOTS = 0x00ffffff - 1;

/** a hash's tag, in place for TAG_MASK: its low 7 bits, which `homeOf` (the high bits) hardly takes */
function tagOf(hash: number): number {
  return hash << 24;
}

/**
 * The entry a hash's probe starts at in a table of `size` entries (any size, not only a power of
 * two): the hash scaled to the size, floor(hash * size / 2^32), so its high bits choose. The
 * product is below 2^58, not exact in a double, but the same hash and size always give the same
 * entry, below `size` (rounding moves the product by at most 32, less than `size`).
 */
function homeOf(hash: number, size: number): number {
  return Math.floor(hash * size * 2 ** -32);
}
/** table sizes are multiples of this (the first table is one) */
const TABLE_STEP = 1024;
const EMPTY = 0;
const GONE = -1;
/** old table entries moved per change while a resize runs */
const MOVE_STEP = 32;

function grown<T extends Uint8Array | Uint32Array | Float64Array>(old: T, bigger: T): T {
  bigger.set(old);
  return bigger;
}

/** the hash of the id `encode` left in SCRATCH */
function hashOfScratch(kind: number): number {
  return hashOfWords(kind, SCRATCH[0]!, SCRATCH[1]!, SCRATCH[2]!, SCRATCH[3]!);
}

/** murmur3's mix of an id's four cell words and its kind (an id has one kind: equal ids hash alike) */
function hashOfWords(kind: number, w0: number, w1: number, w2: number, w3: number): number {
  let hash = mixWord(kind, w0);
  hash = mixWord(hash, w1);
  hash = mixWord(hash, w2);
  hash = mixWord(hash, w3);
  return finalMix(hash);
}

/** murmur3's finaliser: every input bit reaches the low bits the table takes */
function finalMix(hash: number): number {
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

function mixWord(hash: number, word: number): number {
  let k = Math.imul(word, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  hash ^= Math.imul(k, 0x1b873593);
  hash = (hash << 13) | (hash >>> 19);
  return (Math.imul(hash, 5) + 0xe6546b64) | 0;
}

/**
 * Ids kept aside as strings: FNV-1a over the UTF-16 code units, then murmur3's finaliser: FNV's low bits depend on the low
 * bits of each character only (hex digits '1' and 'a' alike), and the table takes the low bits
 */
function hashOf(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return finalMix(hash);
}
