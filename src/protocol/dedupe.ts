/**
 * Message ids accepted within the last `windowMs` (SPEC §7): a second copy of one is answered
 * as accepted and not queued again. Insertion order is expiry order, so pruning is O(expired).
 */
export class DedupeWindow {
  /**
   * id -> expiry, in ms after `#base`: a small integer (a tagged value in the map, for about 24
   * days) rather than an epoch time, which would cost a 16-byte heap number per id
   */
  readonly #seen = new Map<string, number>();
  #windowMs: number;
  readonly #now: () => number;
  readonly #base: number;

  constructor(windowMs: number, now: () => number) {
    this.#windowMs = windowMs;
    this.#now = now;
    this.#base = now();
  }

  set windowMs(value: number) {
    this.#windowMs = value;
  }

  has(messageId: string): boolean {
    this.#prune();
    return this.#seen.has(messageId);
  }

  add(messageId: string): void {
    this.addAt(messageId, this.#now());
  }

  /** remembers an id seen at `seenAt` (ms epoch); ids must come in seenAt order */
  addAt(messageId: string, seenAt: number): void {
    if (this.#windowMs > 0 && seenAt + this.#windowMs > this.#now()) this.#seen.set(messageId, seenAt + this.#windowMs - this.#base);
  }

  /** the ids still remembered, oldest first */
  *ids(): IterableIterator<string> {
    this.#prune();
    yield* this.#seen.keys();
  }

  delete(messageId: string): void {
    this.#seen.delete(messageId);
  }

  #prune(): void {
    const now = this.#now() - this.#base;
    for (const [id, expiresAt] of this.#seen) {
      if (expiresAt > now) return;
      this.#seen.delete(id);
    }
  }
}
