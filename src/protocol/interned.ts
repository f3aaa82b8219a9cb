/**
 * Values that repeat across many rows (queue/rows.ts: a row's shape; store/log-index.ts: a
 * message's record list), each kept once under a string key with a count of the rows naming it,
 * and known by a small number (`ref`) that a typed column holds: 4 bytes a row, not a pointer.
 */
export class Interned<T> {
  readonly #refs = new Map<string, number>();
  #keys: (string | undefined)[] = [];
  #values: (T | undefined)[] = [];
  #counts: number[] = [];
  #free: number[] = [];

  ref(key: string, value: T): number {
    return this.refMade(key, () => value);
  }

  /** `ref`, the value made only when the key is new */
  refMade(key: string, make: () => T): number {
    let ref = this.#refs.get(key);
    if (ref === undefined) {
      ref = this.#free.pop() ?? this.#keys.length;
      this.#keys[ref] = key;
      this.#values[ref] = make();
      this.#counts[ref] = 0;
      this.#refs.set(key, ref);
    }
    this.#counts[ref]!++;
    return ref;
  }

  /** one more row names a value already interned */
  refAgain(ref: number): number {
    this.#counts[ref]!++;
    return ref;
  }

  /** true when no row names it any more (it is gone) */
  unref(ref: number): boolean {
    if (--this.#counts[ref]! > 0) return false;
    this.#refs.delete(this.#keys[ref]!);
    this.#keys[ref] = undefined;
    this.#values[ref] = undefined;
    this.#free.push(ref);
    return true;
  }

  value(ref: number): T {
    return this.#values[ref]!;
  }
}
