/**
 * Message ids accepted within the last `windowMs` (SPEC §7): a second copy of one is answered
 * as accepted and not queued again. Insertion order is expiry order, so pruning is O(expired).
 */
export class DedupeWindow {
  readonly #seen = new Map<string, number>();
  /** no id expires before this: `has` runs per message, and most calls have nothing to prune */
  #firstExpiry = Infinity;
  #windowMs: number;
  readonly #now: () => number;

  constructor(windowMs: number, now: () => number) {
    this.#windowMs = windowMs;
    this.#now = now;
  }

  get windowMs(): number {
    return this.#windowMs;
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
    const expiresAt = seenAt + this.#windowMs;
    if (this.#windowMs <= 0 || expiresAt <= this.#now()) return;
    this.#seen.set(messageId, expiresAt);
    if (expiresAt < this.#firstExpiry) this.#firstExpiry = expiresAt;
  }

  /** the ids still remembered, oldest first */
  *ids(): IterableIterator<string> {
    this.#prune();
    yield* this.#seen.keys();
  }

  delete(messageId: string): void {
    this.#seen.delete(messageId);
    // the next id in line may expire sooner: the next prune looks again
    this.#firstExpiry = 0;
  }

  #prune(): void {
    const now = this.#now();
    if (now < this.#firstExpiry) return;
    for (const [id, expiresAt] of this.#seen) {
      if (expiresAt > now) {
        this.#firstExpiry = expiresAt;
        return;
      }
      this.#seen.delete(id);
    }
    this.#firstExpiry = Infinity;
  }
}
