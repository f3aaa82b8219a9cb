import type { Entry, Group } from './group.js';
import type { MessageStore } from '../store/store.js';

/** bodies a queue holds before new waiting ones stay on disk only (bounded memory, SPEC §7);
 * more than a producer keeps unanswered plus a prefetch: a consumer keeping up never waits for the disk */
export const BODY_WINDOW = 10_000;
/** bodies read back at once for one group, and how far ahead it looks for them */
const LOAD_BATCH = 500;
const LOAD_LOOKAHEAD = 4 * LOAD_BATCH;
export const LOAD_RETRY_MS = 1_000;

/** what the bodies of one queue need from it */
export interface BodyOwner {
  readonly name: string;
  readonly store: MessageStore;
  /** the entry is still held by the queue */
  isHeld(entry: Entry): boolean;
  /** bodies arrived: the group may deliver again */
  pump(group: Group): void;
  /** the store no longer has this body: nothing can deliver the message */
  lost(entry: Entry): void;
  /** a read failed: pump every group again after LOAD_RETRY_MS */
  retryLater(): void;
  warn?(msg: string, fields: Record<string, unknown>): void;
}

/**
 * Which waiting messages of one queue keep their body in memory (`message.data` set) and the
 * reading back of the others from the store, one batch at a time per group in delivery order;
 * the queue's pump stops at a message without its body, so order per id holds meanwhile.
 */
export class QueueBodies {
  /** entries whose body is in memory */
  #held = 0;
  /** 0: every body is kept (the store cannot give them back) */
  readonly #window: number;
  readonly #owner: BodyOwner;

  constructor(owner: BodyOwner, window = BODY_WINDOW) {
    this.#owner = owner;
    this.#window = owner.store.readsBodies ? window : 0;
  }

  get held(): number {
    return this.#held;
  }

  added(entry: Entry): void {
    if (entry.message.data !== undefined) this.#held++;
  }

  forgotten(entry: Entry): void {
    if (entry.message.data !== undefined) this.#held--;
  }

  /** a message just accepted and still waiting: past the window, its body stays on disk only */
  accepted(entry: Entry): void {
    if (this.#window === 0 || this.#held <= this.#window || entry.message.data === undefined) return;
    entry.message.data = undefined;
    entry.message.json = undefined;
    this.#held--;
  }

  /** reads the bodies of the group's next deliveries that are on disk only */
  load(group: Group): void {
    if (group.loading) return;
    const entries: Entry[] = [];
    for (const record of group.upcoming(LOAD_LOOKAHEAD)) {
      // one record per group and message: no entry comes twice
      if (record.entry.message.data === undefined) entries.push(record.entry);
      if (entries.length >= LOAD_BATCH) break;
    }
    group.readAheadSeq = 0;
    if (entries.length === 0) return;
    group.loading = true;
    this.#owner.store.readBodies(entries.map((e) => e.message.messageId)).then(
      (bodies) => {
        group.loading = false;
        bodies.forEach((body, i) => this.#restore(entries[i]!, body));
        // half way through this batch, the next one is read: the pump rarely waits for the disk
        group.readAheadSeq = entries[entries.length >> 1]!.message.seq;
        this.#owner.pump(group);
      },
      (error: unknown) => {
        group.loading = false;
        this.#owner.warn?.('message bodies could not be read back from the store, retrying', { queue: this.#owner.name, group: group.key, error: (error as Error).message });
        this.#owner.retryLater();
      },
    );
  }

  #restore(entry: Entry, body: unknown): void {
    if (!this.#owner.isHeld(entry) || entry.message.data !== undefined) return;
    if (body === undefined) {
      this.#owner.warn?.('message dropped: its body is not in the store', { queue: this.#owner.name, messageId: entry.message.messageId });
      this.#owner.lost(entry);
      return;
    }
    entry.message.data = body;
    this.#held++;
  }
}
