/** a client message the master's feed has not named after this long never reached the master */
export const UNCONFIRMED_AFTER_MS = 2_000;

/**
 * On a slave in step with its master: the messages clients handed this broker that the master
 * has not named yet (its feed names every message it accepts, docs/protocol.md#peers). One the
 * master never names was sent to this slave alone: the slave offers it to the master.
 */
export class Unconfirmed {
  /** messageId -> when it was stored here; insertion order is age order */
  readonly #storedAt = new Map<string, number>();
  #tracking = false;

  /** in step with a master: from now on its feed names what it has */
  start(): void {
    this.#tracking = true;
  }

  /** no master followed: the next sync compares everything anyway */
  stop(): void {
    this.#tracking = false;
    this.#storedAt.clear();
  }

  stored(messageId: string, at: number): void {
    if (this.#tracking) this.#storedAt.set(messageId, at);
  }

  confirm(messageId: string): void {
    this.#storedAt.delete(messageId);
  }

  /** the ids stored before `before` and still not named by the master; no longer tracked */
  takeStoredBefore(before: number): Set<string> {
    const taken = new Set<string>();
    for (const [messageId, at] of this.#storedAt) {
      if (at >= before) break;
      taken.add(messageId);
      this.#storedAt.delete(messageId);
    }
    return taken;
  }
}
