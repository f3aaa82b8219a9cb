import type { Delivery } from '../../protocol/frames.js';
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
  /** `data` as JSON when the message came with it (StoredMessage.json), or was read back as text */
  readonly json: string | undefined;
}

/**
 * A body read back from the store as its JSON text (`MessageStore.readBodyTexts`): a delivery
 * splices the text into its frame, so it is parsed only when something asks for `data` (a dead
 * letter, a sync, a move). Parsing each and serialising the whole delivery again made ~800 B of
 * garbage per message read back (bench/flow-cpu.mjs p100, 2026-12-07).
 */
export class TextBody implements Body {
  readonly json: string;
  #data: unknown = undefined;

  constructor(json: string) {
    this.json = json;
  }

  get data(): unknown {
    // a body is never undefined or null (intake refuses them): undefined means not parsed yet
    if (this.#data === undefined) this.#data = JSON.parse(this.json);
    return this.#data;
  }
}

/**
 * A delivery of a TextBody: `data` is read through to the body (parsed then), so a frame built
 * from `json` parses nothing; the other fields are its own, as a Delivery literal's are.
 */
export class TextBodyDelivery implements Delivery {
  sub = 0;
  readonly #body: TextBody;

  constructor(
    readonly messageId: string,
    readonly channel: string,
    body: TextBody,
    readonly created: number,
    readonly nbRequeues: number,
    readonly from: string,
    readonly via: string,
  ) {
    this.#body = body;
  }

  get data(): unknown {
    return this.#body.data;
  }
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
    const store = this.#owner.store;
    const read = store.readBodyTexts ? store.readBodyTexts(ids).then((texts) => texts.map((text) => (text === undefined ? undefined : new TextBody(text)))) : store.readBodies(ids).then((bodies) => bodies.map((data) => (data === undefined ? undefined : { data, json: undefined })));
    read.then(
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

  #restore(row: number, messageId: string, body: Body | undefined): void {
    if (this.#owner.messageIdOf(row) !== messageId || this.#cache.has(row)) return;
    if (body === undefined) {
      this.#owner.warn?.('message dropped: its body is not in the store', { queue: this.#owner.name, messageId });
      this.#owner.lost(row);
      return;
    }
    this.#cache.set(row, body);
  }
}
