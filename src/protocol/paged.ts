/**
 * Columns that grow by a page, never by copying: doubling one typed array of a million entries
 * copies and faults in tens of megabytes in one turn (31 ms measured for the dedupe window's
 * columns while a broker drained a backlog). A page holds PAGE entries.
 */
const PAGE_BITS = 14;
const PAGE = 1 << PAGE_BITS;
const PAGE_MASK = PAGE - 1;

/**
 * A dense column of numbers by index (0 .. capacity - 1) in typed pages of PAGE entries, grown by
 * `ensure`: the first page doubles from 1,024 up to PAGE (a small table stays small), then whole
 * pages are added. Nothing of more than a page is ever copied, and no old array is left for the
 * garbage collector to free (a doubled array of a million rows was 8-25 MB freed only at the
 * next mark-compact).
 */
abstract class TypedPages<T extends Uint16Array | Uint32Array | Float64Array> {
  protected readonly pages: T[];
  #capacity = FIRST_PAGE;

  constructor() {
    this.pages = [this.make(FIRST_PAGE)];
  }

  protected abstract make(size: number): T;

  get capacity(): number {
    return this.#capacity;
  }

  /** room for index `index` */
  ensure(index: number): void {
    while (index >= this.#capacity) {
      if (this.#capacity < PAGE) {
        const bigger = this.make(this.#capacity * 2);
        bigger.set(this.pages[0]!);
        this.pages[0] = bigger;
        this.#capacity *= 2;
      } else {
        this.pages.push(this.make(PAGE));
        this.#capacity += PAGE;
      }
    }
  }

  get(index: number): number {
    return this.pages[index >>> PAGE_BITS]![index & PAGE_MASK]!;
  }

  set(index: number, value: number): void {
    this.pages[index >>> PAGE_BITS]![index & PAGE_MASK] = value;
  }

  /** `get` at any index: 0 past the capacity (a sparse use: what was never `put`) */
  read(index: number): number {
    return index < this.#capacity ? this.get(index) : 0;
  }

  /** `set` at any index, made room for first */
  put(index: number, value: number): void {
    if (index >= this.#capacity) this.ensure(index);
    this.set(index, value);
  }
}

export class Uint16Pages extends TypedPages<Uint16Array> {
  protected make(size: number): Uint16Array {
    return new Uint16Array(size);
  }
}

export class Uint32Pages extends TypedPages<Uint32Array> {
  protected make(size: number): Uint32Array {
    return new Uint32Array(size);
  }
}

export class Float64Pages extends TypedPages<Float64Array> {
  protected make(size: number): Float64Array {
    return new Float64Array(size);
  }
}

const FIRST_PAGE = 1024;

/**
 * A column of 32-bit numbers by index, mostly 0: a page is made on the first entry set to another
 * number and dropped when its last one is set back to 0, so indexes that are all 0 cost nothing
 * (the store index's record lists: a message waiting for a subscriber has none, and a million
 * of them took 4 MB of zeros).
 */
export class SparseUint32Pages {
  readonly #pages: Array<Uint32Array | undefined> = [];
  /** per page: its entries other than 0 */
  readonly #counts: number[] = [];

  get(index: number): number {
    const page = this.#pages[index >>> PAGE_BITS];
    return page === undefined ? 0 : page[index & PAGE_MASK]!;
  }

  set(index: number, value: number): void {
    const p = index >>> PAGE_BITS;
    let page = this.#pages[p];
    if (page === undefined) {
      if (value === 0) return;
      while (this.#pages.length <= p) {
        this.#pages.push(undefined);
        this.#counts.push(0);
      }
      page = this.#pages[p] = new Uint32Array(PAGE);
    }
    const at = index & PAGE_MASK;
    const old = page[at]!;
    page[at] = value;
    if ((old === 0) === (value === 0)) return;
    if (value !== 0) this.#counts[p]!++;
    else if (--this.#counts[p]! === 0) this.#pages[p] = undefined;
  }
}

/** values by index, a plain array page at a time (pages of 4,096, made whole with `fill`: packed
 * arrays, whatever order the indexes come in); unset entries read `fill` */
export class PagedList<T> {
  readonly #pages: T[][] = [];
  readonly #fill: T;

  constructor(fill: T) {
    this.#fill = fill;
  }

  get(index: number): T {
    const page = this.#pages[index >>> LIST_PAGE_BITS];
    return page === undefined ? this.#fill : page[index & LIST_PAGE_MASK]!;
  }

  set(index: number, value: T): void {
    const page = index >>> LIST_PAGE_BITS;
    while (this.#pages.length <= page) this.#pages.push(new Array<T>(1 << LIST_PAGE_BITS).fill(this.#fill));
    this.#pages[page]![index & LIST_PAGE_MASK] = value;
  }
}

const LIST_PAGE_BITS = 12;
const LIST_PAGE_MASK = (1 << LIST_PAGE_BITS) - 1;

/**
 * Slot numbers in a first-in first-out queue: positions `head .. tail - 1` only grow (they are
 * numbers, not bounded by 2^32), a page is dropped once the head passed it.
 */
export class SlotQueue {
  readonly #pages: Int32Array[] = [];
  /** the page number (position / PAGE) of `#pages[0]` */
  #firstPage = 0;
  head = 0;
  tail = 0;

  /** appends a slot; returns its position */
  push(slot: number): number {
    const position = this.tail;
    const page = Math.floor(position / PAGE) - this.#firstPage;
    if (page === this.#pages.length) this.#pages.push(new Int32Array(PAGE));
    this.#pages[page]![position % PAGE] = slot;
    this.tail++;
    return position;
  }

  /** the slot at a position from `head` to `tail - 1` */
  at(position: number): number {
    return this.#pages[Math.floor(position / PAGE) - this.#firstPage]![position % PAGE]!;
  }

  /** takes the head off (the caller knows the queue is not empty) */
  shift(): void {
    this.head++;
    if (this.head % PAGE === 0) {
      this.#pages.shift();
      this.#firstPage++;
    }
  }
}

/**
 * Numbers that lie near one another by page (times in ms, sequence numbers, log offsets; sizes and
 * segment numbers in 2 bytes), 4 or 2 bytes an entry where a Float64Array takes 8: an entry is
 * kept as its distance from its page's base, a number that does not fit (not an integer, or more
 * than half the width's range away) is kept aside in a Map. When
 * too many entries of a page are aside (the values moved on: a broker up for weeks, a sequence
 * past 2^31 more), the page takes a new base from the value written and its entries are
 * re-expressed from it (a page at most, once per REBASE_AT entries set aside).
 * `clear` an entry no longer used: a new base does not keep it, and it is not kept aside.
 */
export class DeltaPages {
  /** per entry: UNSET, `#aside`'s marker, or 1 + its distance from its page's base */
  readonly #deltas: Uint16Pages | Uint32Pages;
  /** the marker of an entry kept aside: the width's largest number */
  readonly #asideMark: number;
  /** half the width's range: a new base is this far below the value that makes it */
  readonly #half: number;
  /** per page of PAGE entries */
  readonly #bases: number[] = [];
  /** per page: entries kept aside */
  readonly #asideCount: number[] = [];
  /** per page: the count of entries aside at which it takes a new base */
  readonly #rebaseAt: number[] = [];
  readonly #aside = new Map<number, number>();

  /** `bits`: 32 (4 bytes an entry, values within 2^31 of their page's base) or 16 (2 bytes, within 2^15) */
  constructor(bits: 16 | 32 = 32) {
    this.#deltas = bits === 16 ? new Uint16Pages() : new Uint32Pages();
    this.#asideMark = 2 ** bits - 1;
    this.#half = 2 ** (bits - 1);
  }

  get capacity(): number {
    return this.#deltas.capacity;
  }

  ensure(index: number): void {
    this.#deltas.ensure(index);
  }

  /** the value set at `index` (0 when cleared or never set) */
  get(index: number): number {
    const stored = this.#deltas.get(index);
    if (stored === this.#asideMark) return this.#aside.get(index)!;
    return stored === UNSET ? 0 : this.#bases[index >>> PAGE_BITS]! + stored - 1;
  }

  set(index: number, value: number): void {
    const page = index >>> PAGE_BITS;
    let base = this.#bases[page];
    if (base === undefined) {
      while (this.#bases.length <= page) {
        this.#bases.push(0);
        this.#asideCount.push(0);
        this.#rebaseAt.push(REBASE_AT);
      }
      base = this.#bases[page] = this.#baseFor(value);
    }
    if (this.#deltas.get(index) === this.#asideMark) this.#unaside(index, page);
    const stored = this.#storedFor(value, base);
    if (stored !== this.#asideMark) {
      this.#deltas.set(index, stored);
      return;
    }
    this.#deltas.set(index, this.#asideMark);
    this.#aside.set(index, value);
    if (++this.#asideCount[page]! >= this.#rebaseAt[page]! && Number.isSafeInteger(value)) this.#rebase(page, this.#baseFor(value));
  }

  /** the entry is not used any more */
  clear(index: number): void {
    if (this.#deltas.get(index) === this.#asideMark) this.#unaside(index, index >>> PAGE_BITS);
    this.#deltas.set(index, UNSET);
  }

  #unaside(index: number, page: number): void {
    this.#aside.delete(index);
    this.#asideCount[page]!--;
  }

  /** every entry of the page re-expressed from `base`: those that do not fit go aside, those aside that fit come back */
  #rebase(page: number, base: number): void {
    const old = this.#bases[page]!;
    const from = page * PAGE;
    const to = Math.min(from + PAGE, this.#deltas.capacity);
    let aside = 0;
    for (let index = from; index < to; index++) {
      const stored = this.#deltas.get(index);
      if (stored === UNSET) continue;
      const value = stored === this.#asideMark ? this.#aside.get(index)! : old + stored - 1;
      const next = this.#storedFor(value, base);
      this.#deltas.set(index, next);
      if (next === this.#asideMark) {
        this.#aside.set(index, value);
        aside++;
      } else if (stored === this.#asideMark) this.#aside.delete(index);
    }
    this.#bases[page] = base;
    this.#asideCount[page] = aside;
    // as many entries set aside again before the next one: a page cut between two eras rebases rarely
    this.#rebaseAt[page] = Math.max(REBASE_AT, aside * 2);
  }

  /** a base that fits `value` and values up to half the range below or above it */
  #baseFor(value: number): number {
    return Number.isSafeInteger(value) ? value - this.#half : 0;
  }

  #storedFor(value: number, base: number): number {
    const delta = value - base;
    return Number.isInteger(delta) && delta >= 0 && delta < this.#asideMark - 1 && Number.isSafeInteger(value) ? delta + 1 : this.#asideMark;
  }
}

const UNSET = 0;
/** entries of a page set aside before it takes a new base */
const REBASE_AT = 4096;
