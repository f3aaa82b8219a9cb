/** A binary min-heap ordered by a numeric key: delayed requeues and retries, O(log n) each. */
export class MinHeap<T> {
  readonly #items: T[] = [];
  readonly #key: (item: T) => number;

  constructor(key: (item: T) => number) {
    this.#key = key;
  }

  get size(): number {
    return this.#items.length;
  }

  peek(): T | undefined {
    return this.#items[0];
  }

  push(item: T): void {
    const items = this.#items;
    items.push(item);
    let i = items.length - 1;
    const k = this.#key(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = items[parent] as T;
      if (this.#key(p) <= k) break;
      items[i] = p;
      i = parent;
    }
    items[i] = item;
  }

  /** keeps the items `keep` accepts, in heap order again (O(n)) */
  retain(keep: (item: T) => boolean): void {
    const kept = this.#items.filter(keep);
    this.#items.length = 0;
    for (const item of kept) this.push(item);
  }

  pop(): T | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    const k = this.#key(last);
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= items.length) break;
      const right = left + 1;
      let child = left;
      if (right < items.length && this.#key(items[right] as T) < this.#key(items[left] as T)) child = right;
      if (this.#key(items[child] as T) >= k) break;
      items[i] = items[child] as T;
      i = child;
    }
    items[i] = last;
    return top;
  }
}
