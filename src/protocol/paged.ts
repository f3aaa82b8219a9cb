/**
 * Columns that grow by a page, never by copying: doubling one typed array of a million entries
 * copies and faults in tens of megabytes in one turn (31 ms measured for the dedupe window's
 * columns while a broker drained a backlog). A page holds PAGE entries.
 */
const PAGE_BITS = 16;
const PAGE = 1 << PAGE_BITS;
const PAGE_MASK = PAGE - 1;

/** numbers by index (below 2^32), a Float64Array page at a time; unset entries read 0 */
export class PagedColumn {
  readonly #pages: Float64Array[] = [];

  get(index: number): number {
    return this.#pages[index >>> PAGE_BITS]?.[index & PAGE_MASK] ?? 0;
  }

  set(index: number, value: number): void {
    const page = index >>> PAGE_BITS;
    while (this.#pages.length <= page) this.#pages.push(new Float64Array(PAGE));
    this.#pages[page]![index & PAGE_MASK] = value;
  }
}

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
