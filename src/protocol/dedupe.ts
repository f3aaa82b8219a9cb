/**
 * Message ids accepted within the last `windowMs` (SPEC §7): a second copy of one is answered
 * as accepted and not queued again. Ids may come out of acceptance order (a broker adds an id
 * when its queue forgets the message, `addAt` with its acceptance time): `has` reads the expiry,
 * and pruning goes from the oldest insertion while expired, so an id stays at most `windowMs`
 * after it was added, and pruning is O(expired).
 */
export class DedupeWindow {
  /**
   * id -> expiry, in ms after `#base`: a small integer (a tagged value in the map, for about 24
   * days) rather than an epoch time, which would cost a 16-byte heap number per id
   */
  readonly #seen = new Map<string, number>();
  /** no id expires before this (ms after `#base`): `has` runs per message, most calls prune nothing */
  #firstExpiry = Infinity;
  #windowMs: number;
  readonly #now: () => number;
  readonly #base: number;

  constructor(windowMs: number, now: () => number) {
    this.#windowMs = windowMs;
    this.#now = now;
    this.#base = now();
  }

  get windowMs(): number {
    return this.#windowMs;
  }

  set windowMs(value: number) {
    this.#windowMs = value;
  }

  has(messageId: string): boolean {
    this.#prune();
    const expiresAt = this.#seen.get(messageId);
    return expiresAt !== undefined && expiresAt > this.#now() - this.#base;
  }

  add(messageId: string): void {
    this.addAt(messageId, this.#now());
  }

  /** remembers an id seen at `seenAt` (ms epoch), in any order: one already expired is not kept */
  addAt(messageId: string, seenAt: number): void {
    const expiresAt = seenAt + this.#windowMs - this.#base;
    if (this.#windowMs <= 0 || expiresAt <= this.#now() - this.#base) return;
    // a later insertion goes to the end of the order, so the pruning from the head stays fair
    this.#seen.delete(messageId);
    this.#seen.set(messageId, expiresAt);
    if (expiresAt < this.#firstExpiry) this.#firstExpiry = expiresAt;
  }

  /** the ids still remembered, in the order they were added */
  *ids(): IterableIterator<string> {
    this.#prune();
    const now = this.#now() - this.#base;
    for (const [id, expiresAt] of this.#seen) if (expiresAt > now) yield id;
  }

  delete(messageId: string): void {
    this.#seen.delete(messageId);
    // the next id in line may expire sooner: the next prune looks again
    this.#firstExpiry = 0;
  }

  #prune(): void {
    const now = this.#now() - this.#base;
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
