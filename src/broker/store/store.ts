import type { IdSlots } from '../../protocol/id-slots.js';

/**
 * What a broker keeps about its messages, behind one small interface so the in-memory store
 * and the durable store (SPEC §8) are interchangeable. The queue owns the live state; a store
 * only records it and gives it back on start.
 */
export interface StoredMessage {
  /** broker-local acceptance order, strictly increasing */
  readonly seq: number;
  readonly messageId: string;
  /** `endpoint/version` */
  readonly queue: string;
  /** canonical id or `*` */
  readonly id: string;
  /**
   * The body; `undefined` while it is only on disk (bounded memory, SPEC §7): a queue drops the
   * bodies of messages far from delivery and reads them back with `MessageStore.readBodies`.
   */
  data: unknown;
  /** the sender's clock, ms since the epoch */
  readonly created: number;
  /** this broker's clock at acceptance, ms since the epoch */
  readonly acceptedAt: number;
  /** the sender's client name */
  readonly from: string;
  /**
   * `data` as JSON, made once at intake and shared by the store's record and every delivery
   * frame (no serialisation per recipient); dropped with `data`, optional: without it each
   * user serialises `data` itself.
   */
  json?: string | undefined;
}

/** Why a delivery record left its group for good. */
export type Settlement = 'acked' | 'dead-lettered' | 'dropped' | 'expired';

/**
 * A change to a stored message. `slot`, when the recorder has it: the message's slot in the
 * store's `messageIds` while the store holds it there too (queue/rows.ts `storeSlot`), so the
 * store applies the event without finding the id again (a find per event was a third of the id
 * map's cost at prefetch 100).
 */
export type StoreEvent =
  /** the message now has a delivery record in each of these groups (docs/protocol.md#groups) */
  | { readonly kind: 'assign'; readonly messageId: string; readonly groups: readonly string[]; readonly slot?: number | undefined }
  | { readonly kind: 'settle'; readonly messageId: string; readonly group: string; readonly outcome: Settlement; readonly slot?: number | undefined }
  /** a record was handed to a subscriber: if the broker dies before the ack, it counts (SPEC §8) */
  | { readonly kind: 'deliver'; readonly messageId: string; readonly group: string; readonly nbRequeues: number; readonly slot?: number | undefined }
  /** a delivery failed or was refused: the record waits again, until `notBefore` (ms epoch) */
  | { readonly kind: 'requeue'; readonly messageId: string; readonly group: string; readonly nbRequeues: number; readonly notBefore: number; readonly slot?: number | undefined }
  /** every record is settled: the message may be forgotten */
  | { readonly kind: 'remove'; readonly messageId: string; readonly slot?: number | undefined };

export interface RecoveredRecord {
  readonly group: string;
  readonly nbRequeues: number;
  readonly notBefore: number;
}

export interface RecoveredMessage {
  readonly message: StoredMessage;
  /** empty when the message was never assigned to a group (it waits for a subscriber) */
  readonly records: readonly RecoveredRecord[];
}

export interface RecoveredState {
  /** every message not removed, in `seq` order, with its unsettled records */
  readonly messages: readonly RecoveredMessage[];
  /** ids removed within the dedupe window of their acceptance (held ones are in `messages`), so the window survives a restart (SPEC §7) */
  readonly recent: ReadonlyArray<{ readonly messageId: string; readonly acceptedAt: number }>;
}

export interface MessageStore {
  load(): Promise<RecoveredState>;
  /** resolves once the messages are durable: a send is answered only after this */
  append(messages: readonly StoredMessage[]): Promise<void>;
  /** state changes, recorded in order; durable with the next commit */
  record(events: readonly StoreEvent[]): void;
  /** true when `readBodies` can give bodies back: only then may a queue drop them from memory */
  readonly readsBodies: boolean;
  /**
   * The bodies of live messages read back from disk, in the order asked, without blocking the
   * event loop; `undefined` for a message the store does not hold (removed meanwhile).
   */
  readBodies(messageIds: readonly string[]): Promise<unknown[]>;
  /**
   * The same bodies as the JSON text they were stored from (`StoredMessage.json`), not parsed:
   * a queue delivers them as they are (queue/bodies.ts). Optional: without it a queue parses
   * what `readBodies` gives.
   */
  readBodyTexts?(messageIds: readonly string[]): Promise<Array<string | undefined>>;
  /**
   * The store's id map of the messages it holds, when it keeps one (the durable store's index):
   * the router's rows key their columns by the same slots, so an id is kept once (queue/rows.ts)
   */
  readonly messageIds?: IdSlots;
  /** false once a write failed: new sends are refused with E_STORE (SPEC §8) */
  isHealthy(): boolean;
  close(): Promise<void>;
}

/** what a stored message is made of, before this broker numbers it */
export type MessageFields = Pick<StoredMessage, 'messageId' | 'queue' | 'id' | 'data' | 'created' | 'acceptedAt' | 'from'>;

/** the one maker of a stored message (intake, a mirror's feed, dead letters): one shape, `json` made once here */
export function makeStoredMessage(seq: number, m: MessageFields): StoredMessage {
  return { seq, messageId: m.messageId, queue: m.queue, id: m.id, data: m.data, created: m.created, acceptedAt: m.acceptedAt, from: m.from, json: JSON.stringify(m.data) };
}
