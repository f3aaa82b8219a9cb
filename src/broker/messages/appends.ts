import type { StoredMessage } from '../store/store.js';

/**
 * Messages admitted (queued, delivered, fed to mirrors) in one turn of the event loop, past which
 * the next append's admission waits for the next turn: appends that end together (one synced
 * write for several, a master storing thousands of its peers' offers) were admitted one after
 * the other in one turn, and a master with leaseTtl 2 missed its renewals and fenced itself
 * (atk27f F2). Order is kept: each admission still waits for the one before it.
 */
export const ADMIT_PER_TURN = 500;

/** resolves in the next turn of the event loop (after the I/O waiting now) */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Store appends under way, by message id: a second copy of an id waits for the first one's
 * append (SPEC §7), and on a slave an ack that overtook its message waits until the message is
 * queued (docs/protocol.md#peers).
 * Admitted (queued) in the order they began, whichever write ends first: a slave's client copies
 * and master's feed take two paths; out of its master's order per id, its queue would break it
 * once promoted or handed over (issue 31, docs/architecture.md#one-mirror-message-file-by-file).
 */
export class Appends {
  readonly #underWay = new Map<string, Promise<void>>();
  readonly #afterAdmit = new Map<string, Array<() => void>>();
  /** per id under way, settles once it is admitted or its append failed */
  readonly #finished = new Map<string, Promise<void>>();
  /** settles once every append begun so far is admitted or failed: the next one admits after it */
  #admitted: Promise<void> = Promise.resolve();
  /** messages admitted in this turn of the event loop (reset at the next one) */
  #admittedThisTurn = 0;
  #turnEnds = false;

  /** the append under way for this id, if any */
  of(messageId: string): Promise<void> | undefined {
    return this.#underWay.get(messageId);
  }

  /** appends with `append`, then `admit` (queues them): ids are under way until both are done */
  async run(messages: readonly StoredMessage[], append: (messages: readonly StoredMessage[]) => Promise<void>, admit: () => void): Promise<void> {
    const stored = append(messages);
    const before = this.#admitted;
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    this.#admitted = finished;
    for (const message of messages) {
      this.#underWay.set(message.messageId, stored);
      this.#finished.set(message.messageId, finished);
    }
    try {
      const failed = await stored.then(() => null, (error: unknown) => ({ error }));
      await before;
      if (failed) throw failed.error;
      if (this.#admittedThisTurn >= ADMIT_PER_TURN) await nextTurn();
      admit();
      this.#spent(messages.length);
    } finally {
      done();
      for (const message of messages) {
        this.#underWay.delete(message.messageId);
        this.#afterAdmit.delete(message.messageId);
        if (this.#finished.get(message.messageId) === finished) this.#finished.delete(message.messageId);
      }
    }
  }

  /** counts admissions of this turn of the event loop: the count starts again at the next one */
  #spent(count: number): void {
    this.#admittedThisTurn += count;
    if (this.#turnEnds) return;
    this.#turnEnds = true;
    setImmediate(() => {
      this.#admittedThisTurn = 0;
      this.#turnEnds = false;
    });
  }

  /** settles once this id is admitted or its append failed (at once if none is under way) */
  finished(messageId: string): Promise<void> {
    return this.#finished.get(messageId) ?? Promise.resolve();
  }

  /** runs `then` once every append begun so far is admitted (or failed), before any begun later is */
  inOrder(then: () => void): Promise<void> {
    const before = this.#admitted;
    let done!: () => void;
    this.#admitted = new Promise((resolve) => (done = resolve));
    return before.then(then).finally(done);
  }

  /** every id under way now */
  ids(): IterableIterator<string> {
    return this.#underWay.keys();
  }

  /** runs `then` once this id is admitted; false (and nothing kept) when no append is under way */
  afterAdmit(messageId: string, then: () => void): boolean {
    if (!this.#underWay.has(messageId)) return false;
    const waiting = this.#afterAdmit.get(messageId);
    if (waiting) waiting.push(then);
    else this.#afterAdmit.set(messageId, [then]);
    return true;
  }

  /** called by `admit` for each message it queued */
  admitted(messageId: string): void {
    for (const then of this.#afterAdmit.get(messageId) ?? []) then();
  }
}
