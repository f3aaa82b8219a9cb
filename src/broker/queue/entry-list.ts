import type { Entry } from './group.js';

/**
 * Entries in acceptance order with lazy removal: 8 bytes per entry where a Set costs about 30,
 * which counts at a million waiting messages (bounded memory, SPEC §7). An entry leaves when
 * `isMember` turns false for it and `removed()` is called; its slot is skipped, then reclaimed.
 */
export class EntryList {
  #items: Entry[] = [];
  #head = 0;
  #count = 0;
  /** a cursor walks the items (adoption): no compaction may shift them meanwhile */
  #pinned = false;
  readonly #isMember: (entry: Entry) => boolean;

  constructor(isMember: (entry: Entry) => boolean) {
    this.#isMember = isMember;
  }

  get size(): number {
    return this.#count;
  }

  /** slots kept, members or not: bounded by about twice the members plus 1,024 */
  get slotCount(): number {
    return this.#items.length;
  }

  add(entry: Entry): void {
    this.#items.push(entry);
    this.#count++;
  }

  /** an entry of this list stopped being a member */
  removed(): void {
    this.#count--;
    while (this.#head < this.#items.length && !this.#isMember(this.#items[this.#head]!)) this.#head++;
    const dead = this.#items.length - this.#head - this.#count;
    if (this.#pinned) return;
    if (this.#head === this.#items.length) {
      this.#items = [];
      this.#head = 0;
    } else if (dead > 1024 && dead > this.#count) {
      this.#items = this.#items.slice(this.#head).filter(this.#isMember);
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      // removals in order leave no dead slot after the head, but every slot before it still
      // names its entry: a drain with one message always held kept every drained one alive
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
  }

  *[Symbol.iterator](): IterableIterator<Entry> {
    for (let i = this.#head; i < this.#items.length; i++) {
      const entry = this.#items[i]!;
      if (this.#isMember(entry)) yield entry;
    }
  }

  /**
   * Walks the members in order, across event-loop turns: entries added meanwhile are reached
   * too. Returns the next member, or undefined at the end (which unpins the list).
   */
  cursor(): () => Entry | undefined {
    this.#pinned = true;
    let i = this.#head;
    return () => {
      while (i < this.#items.length) {
        const entry = this.#items[i++]!;
        if (this.#isMember(entry)) return entry;
      }
      this.#pinned = false;
      return undefined;
    };
  }
}
