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

/** values by index, a plain array page at a time (pages of 4,096: a page is filled by
 * assignment in index order, so it stays a packed array); unset entries read undefined */
export class PagedList<T> {
  readonly #pages: T[][] = [];

  get(index: number): T | undefined {
    return this.#pages[index >>> LIST_PAGE_BITS]?.[index & LIST_PAGE_MASK];
  }

  set(index: number, value: T): void {
    const page = index >>> LIST_PAGE_BITS;
    while (this.#pages.length <= page) this.#pages.push([]);
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
