import type { MessageRows } from './rows.js';

/**
 * One queue's rows in acceptance order: a ring of row numbers, a removed row leaves a hole
 * (-1) that the head skips. Positions only grow, so a row's position (kept in its column)
 * finds its slot, and a group's cursor or the ttl's survives removals and additions.
 */
export class RowRing {
  readonly #rows: MessageRows;
  #ring = new Int32Array(1024);
  /** position of the ring's slot 0 ... */
  #start = 0;
  /** ... positions from #head (first live or hole not yet skipped) to #tail (next free) */
  #head = 0;
  #tail = 0;
  #count = 0;

  constructor(rows: MessageRows) {
    this.#rows = rows;
  }

  get size(): number {
    return this.#count;
  }

  get head(): number {
    return this.#head;
  }

  get tail(): number {
    return this.#tail;
  }

  push(row: number): void {
    if (this.#tail - this.#start === this.#ring.length) this.#compact();
    this.#ring[this.#tail - this.#start] = row;
    this.#rows.setPosition(row, this.#tail);
    this.#tail++;
    this.#count++;
  }

  remove(row: number): void {
    // positions are kept modulo 2^32 by the rows; the ring spans fewer, so the difference is exact
    const at = (this.#rows.position32(row) - (this.#start % 2 ** 32) + 2 ** 32) % 2 ** 32;
    if (at >= this.#tail - this.#start || this.#ring[at] !== row) return;
    this.#ring[at] = -1;
    this.#count--;
    while (this.#head < this.#tail && this.#ring[this.#head - this.#start]! < 0) this.#head++;
    // empty: start again at the ring's beginning (positions keep growing)
    if (this.#count === 0) this.#start = this.#head;
  }

  /** the row at a position from `head` to `tail` (-1: a hole) */
  rowAt(position: number): number {
    return position < this.#head ? -1 : this.#ring[position - this.#start]!;
  }

  /** the position of the first live row at or after `position`; `tail` when none */
  next(position: number): number {
    let p = Math.max(position, this.#head);
    while (p < this.#tail && this.#ring[p - this.#start]! < 0) p++;
    return p;
  }

  /** the first row, -1 when none */
  first(): number {
    return this.#head < this.#tail ? this.#ring[this.#head - this.#start]! : -1;
  }

  *[Symbol.iterator](): IterableIterator<number> {
    for (let p = this.#head; p < this.#tail; p++) {
      const row = this.#ring[p - this.#start]!;
      if (row >= 0) yield row;
    }
  }

  /** drops the part before the head; grows when more than half is in use (holes count as in use) */
  #compact(): void {
    const used = this.#tail - this.#head;
    const ring = used * 2 > this.#ring.length ? new Int32Array(this.#ring.length * 2) : this.#ring;
    if (ring === this.#ring) this.#ring.copyWithin(0, this.#head - this.#start, this.#tail - this.#start);
    else ring.set(this.#ring.subarray(this.#head - this.#start, this.#tail - this.#start));
    this.#ring = ring;
    this.#start = this.#head;
  }
}
