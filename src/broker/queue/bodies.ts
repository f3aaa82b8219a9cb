import type { Group } from './group.js';
import type { MessageStore } from '../store/store.js';

/** bodies a queue holds before new waiting ones stay on disk only (bounded memory, SPEC §7);
 * more than a producer keeps unanswered plus a prefetch: a consumer keeping up never waits for the disk */
export const BODY_WINDOW = 10_000;
/** bodies read back at once for one group, and how far ahead it looks for them */
const LOAD_BATCH = 500;
const LOAD_LOOKAHEAD = 4 * LOAD_BATCH;
export const LOAD_RETRY_MS = 1_000;

export interface Body {
  readonly data: unknown;
  /** `data` as JSON when the message came with it (StoredMessage.json) */
  readonly json: string | undefined;
}

/** what the bodies of one queue need from it */
export interface BodyOwner {
  readonly name: string;
  readonly store: MessageStore;
  /** the message id of a row of this queue; undefined when the row is no longer this queue's */
  messageIdOf(row: number): string | undefined;
  /** rows of the group's next deliveries, in order, as far as `limit` */
  upcoming(group: Group, limit: number): number[];
  seqOf(row: number): number;
  /** bodies arrived: the group may deliver again */
  pump(group: Group): void;
  /** the store no longer has this body: nothing can deliver the message */
  lost(row: number): void;
  /** a read failed: pump every group again after LOAD_RETRY_MS */
  retryLater(): void;
  warn?(msg: string, fields: Record<string, unknown>): void;
}

/**
 * The bodies of one queue's rows: a cache by row, the first `memoryWindow` waiting ones kept at
 * intake, the others read back from the store one batch at a time per group in delivery order
 * (the queue's pump stops at a row without its body, so order per id holds meanwhile).
 */
export class QueueBodies {
  readonly #cache = new Map<number, Body>();
  /** Infinity: every body is kept (the store cannot give them back) */
  readonly #window: number;
  readonly #owner: BodyOwner;

  constructor(owner: BodyOwner, window = BODY_WINDOW) {
    this.#owner = owner;
    this.#window = owner.store.readsBodies ? window : Infinity;
  }

  /** rows whose body is in memory */
  get held(): number {
    return this.#cache.size;
  }

  get(row: number): Body | undefined {
    return this.#cache.get(row);
  }

  /** a row just made: its body is in memory until `trim` finds the window full */
  added(row: number, data: unknown, json: string | undefined): void {
    if (data !== undefined) this.#cache.set(row, { data, json });
  }

  /** past the window, a row's body stays on disk only (one not in flight anywhere: a redelivery would wait for the disk) */
  trim(row: number): void {
    if (this.#cache.size > this.#window) this.#cache.delete(row);
  }

  forgotten(row: number): void {
    this.#cache.delete(row);
  }

  /** reads the bodies of the group's next deliveries that are on disk only */
  load(group: Group): void {
    if (group.loading) return;
    const rows: number[] = [];
    const ids: string[] = [];
    for (const row of this.#owner.upcoming(group, LOAD_LOOKAHEAD)) {
      if (this.#cache.has(row)) continue;
      rows.push(row);
      ids.push(this.#owner.messageIdOf(row)!);
      if (rows.length >= LOAD_BATCH) break;
    }
    group.readAheadSeq = 0;
    if (rows.length === 0) return;
    group.loading = true;
    this.#owner.store.readBodies(ids).then(
      (bodies) => {
        group.loading = false;
        bodies.forEach((body, i) => this.#restore(rows[i]!, ids[i]!, body));
        // half way through this batch, the next one is read: the pump rarely waits for the disk
        const half = rows[rows.length >> 1]!;
        group.readAheadSeq = this.#owner.messageIdOf(half) === ids[rows.length >> 1] ? this.#owner.seqOf(half) : 0;
        this.#owner.pump(group);
      },
      (error: unknown) => {
        group.loading = false;
        this.#owner.warn?.('message bodies could not be read back from the store, retrying', { queue: this.#owner.name, group: group.key, error: (error as Error).message });
        this.#owner.retryLater();
      },
    );
  }

  #restore(row: number, messageId: string, body: unknown): void {
    if (this.#owner.messageIdOf(row) !== messageId || this.#cache.has(row)) return;
    if (body === undefined) {
      this.#owner.warn?.('message dropped: its body is not in the store', { queue: this.#owner.name, messageId });
      this.#owner.lost(row);
      return;
    }
    this.#cache.set(row, { data: body, json: undefined });
  }
}
