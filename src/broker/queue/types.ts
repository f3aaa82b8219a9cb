import type { Overflow } from '../../config/types.js';
import type { MessageStore, StoredMessage, StoreEvent } from '../store/store.js';
import type { MessageRows } from './rows.js';

/** One queue's settings, from the config's defaults and its `channels` entry. */
export interface QueueSettings {
  readonly prefetch: number;
  readonly ttlMs: number | null;
  readonly maxItems: number;
  readonly overflow: Overflow;
  readonly requeueLimit: number;
  readonly requeueIntervalMs: number;
  /** a delivery's deadline is never moved past this long after it was handed out (touch); default 1 h */
  readonly maxTouchMs?: number;
  readonly deadLetter: string | null;
}

export interface QueueEnvironment {
  now(): number;
  readonly store: MessageStore;
  /**
   * A message delivered `requeueLimit` times leaves its group: to the channel's dead-letter
   * channel when `target` is set, dropped otherwise (counted here, logged by the router).
   */
  discard(target: string | null, message: StoredMessage, group: string, nbDeliveries: number, reason: string): void;
  /**
   * waiting messages whose bodies a queue keeps in memory; the others are read back from the
   * store when delivery nears them (needs `store.readsBodies`; config `memoryWindow`)
   */
  readonly bodyWindow?: number;
  warn?(msg: string, fields: Record<string, unknown>): void;
  /** soft-stop (src/broker/lifecycle.ts): no new delivery starts while this answers true */
  isDraining?(): boolean;
  /** the rows of every queue of a router (which finds a message's queue by them); a table of its own when not given */
  readonly rows?: MessageRows;
  /** state changes the queue recorded in the store (assign, deliver, settle, requeue, remove): the mirrors' feed follows them */
  recorded?(events: StoreEvent[]): void;
  /** the queue no longer holds this message (the router's message index and dedupe window follow) */
  forgotten?(messageId: string, acceptedAt: number): void;
  /** a delivery in flight ended (acked, nacked, timed out): soft-stop waits on these */
  flightEnded?(): void;
  /** a recipient group was made or went: the router keeps the list a restart holds again (messages/held-groups.ts) */
  groupsChanged?(): void;
}

export interface QueueCounters {
  received: number;
  delivered: number;
  acked: number;
  requeued: number;
  timedOut: number;
  deadLettered: number;
  dropped: number;
  expired: number;
}

export interface MessageSummary {
  readonly messageId: string;
  /** canonical escaped id, or `*` */
  readonly id: string;
  /** the sender's clock, ms since the epoch */
  readonly created: number;
  readonly acceptedAt: number;
  readonly from: string;
  /** no group matched it yet: it waits for the first subscriber */
  readonly waitingForSubscriber: boolean;
  readonly groups: ReadonlyArray<{ readonly group: string; readonly state: string; readonly nbRequeues: number }>;
}
