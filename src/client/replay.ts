import { WhiskerError, errorFromPayload } from '../protocol/errors.js';
import type { ChannelSet } from '../protocol/channel.js';
import type { ReplayEndFrame, ReplayFrame, ReplyFrame } from '../protocol/frames.js';
import type { SubscriptionSink } from './subscription.js';
import type { DeliveryInfo } from './types.js';

/** where a replay starts: a Date or ms since the epoch (inclusive), or after a message id */
export type ReplaySince = Date | number | string;

export interface ReplayOptions {
  since?: ReplaySince;
  /** a Date or ms since the epoch, inclusive */
  until?: Date | number;
  /** at most this many messages */
  limit?: number;
}

/** A replay under way (docs/client.md#replay): `done` resolves with the count once it ended. */
export interface ReplayHandle {
  readonly done: Promise<number>;
}

interface Pending {
  readonly sink: SubscriptionSink;
  /** how many distinct ids the replay names: all of them refused ends it with the refusal */
  readonly ids: number;
  count: number;
  readonly finish: (error: WhiskerError | null, count: number) => void;
}

export function replayFrame(req: number, sub: number, set: ChannelSet, options: ReplayOptions): ReplayFrame {
  const frame: ReplayFrame = { type: 'replay', req, sub, endpoint: set.endpoint, version: set.version, ids: [...set.ids] };
  const { since, until, limit } = options;
  if (typeof since === 'string') frame.sinceId = since;
  else if (since !== undefined) frame.since = toMs(since, 'since');
  if (until !== undefined) frame.until = toMs(until, 'until');
  if (limit !== undefined) {
    if (!Number.isSafeInteger(limit) || limit < 1) throw new WhiskerError('E_BAD_ARGUMENT', 'limit must be a positive integer');
    frame.limit = limit;
  }
  return frame;
}

function toMs(value: Date | number, name: string): number {
  const ms = value instanceof Date ? value.getTime() : value;
  if (!Number.isSafeInteger(ms) || ms < 0) throw new WhiskerError('E_BAD_ARGUMENT', `${name} must be a Date or ms since the epoch`);
  return ms;
}

/** The client's replays under way, by sub: their deliveries and their end. */
export class Replays {
  readonly #pending = new Map<number, Pending>();

  has(sub: number): boolean {
    return this.#pending.has(sub);
  }

  add(sub: number, sink: SubscriptionSink, ids: number, finish: (error: WhiskerError | null, count: number) => void): void {
    this.#pending.set(sub, { sink, ids, count: 0, finish });
  }

  /** the broker's answer to the replay frame: a refusal ends it */
  replied(sub: number, reply: ReplyFrame | null): void {
    if (reply === null) return this.#end(sub, new WhiskerError('E_NO_MASTER', 'No broker connected to replay from'));
    if (reply.error) return this.#end(sub, errorFromPayload(reply.error));
    const refused = reply.refused ?? [];
    const pending = this.#pending.get(sub);
    if (!pending || refused.length === 0) return;
    // every id refused: the replay ends with the refusal (E_FORBIDDEN), not as an empty history
    const empty = refused.length >= pending.ids;
    for (const r of refused) pending.sink.refusal(errorFromPayload(r.error), empty);
    if (empty) this.#end(sub, errorFromPayload(refused[0]!.error));
  }

  deliver(sub: number, data: unknown, info: DeliveryInfo): void {
    const pending = this.#pending.get(sub);
    if (!pending) return;
    pending.count++;
    pending.sink.message(data, info, () => {}); // a replay is never acked: it does not touch the queue
  }

  ended(frame: ReplayEndFrame): void {
    this.#end(frame.sub, frame.error ? errorFromPayload(frame.error) : null, frame.count);
  }

  failAll(error: WhiskerError): void {
    this.fail(this.#pending.keys(), error);
  }

  /** the broker serving these replays went away, or the client disconnected */
  fail(subs: Iterable<number>, error: WhiskerError): void {
    for (const sub of [...subs]) this.#end(sub, error);
  }

  #end(sub: number, error: WhiskerError | null, count?: number): void {
    const pending = this.#pending.get(sub);
    if (!pending) return;
    this.#pending.delete(sub);
    pending.finish(error, count ?? pending.count);
  }
}

/**
 * The live side of `listen(channel, { since })`: live messages wait here while the history is
 * replayed, then go to the handler, those the replay already gave dropped (the seam). Every
 * replayed id is compared, however many (issue 27: a waiting backlog of any size). First
 * deliveries of one channel id come in acceptance order, as the replay does: once a live copy
 * of a replayed message passed, the replayed ones before it cannot come any more and are
 * forgotten; once a live message the replay did not give follows one it gave, all of that id's.
 */
export class SeamSink implements SubscriptionSink {
  readonly #target: SubscriptionSink;
  #waiting: Array<[data: unknown, info: DeliveryInfo, settle: Parameters<SubscriptionSink['message']>[2]]> | null = [];
  /** replayed message id -> its channel id and its place in that id's list */
  readonly #replayed = new Map<string, { readonly id: string; readonly at: number }>();
  /** per channel id: the replayed message ids in acceptance order, from `start` on still kept */
  readonly #byId = new Map<string, { readonly ids: string[]; start: number; matched: boolean }>();

  constructor(target: SubscriptionSink) {
    this.#target = target;
  }

  /** a replayed message: its live copy, if one comes, is dropped */
  replayed(messageId: string, id: string): void {
    let list = this.#byId.get(id);
    if (!list) this.#byId.set(id, (list = { ids: [], start: 0, matched: false }));
    this.#replayed.set(messageId, { id, at: list.ids.length });
    list.ids.push(messageId);
  }

  /** the replay ended: what waited goes to the handler, in order */
  open(): void {
    const waiting = this.#waiting ?? [];
    this.#waiting = null;
    for (const [data, info, settle] of waiting) this.message(data, info, settle);
  }

  message(data: unknown, info: DeliveryInfo, settle: Parameters<SubscriptionSink['message']>[2]): void {
    if (this.#waiting) {
      this.#waiting.push([data, info, settle]);
      return;
    }
    const replayed = this.#replayed.get(info.messageId);
    if (info.nbRequeues === 0) this.#passed(info.channel.id, replayed?.at);
    if (replayed) return settle(true, 0);
    this.#target.message(data, info, settle);
  }

  /** a first delivery of `id` passed (at `at` in its replayed list, or not replayed): forget what cannot come again */
  #passed(id: string, at: number | undefined): void {
    const list = this.#byId.get(id);
    if (!list) return;
    if (at === undefined && !list.matched) return; // older than `since`, or newer: not known yet
    const end = at === undefined ? list.ids.length : at + 1;
    for (let i = list.start; i < end; i++) this.#replayed.delete(list.ids[i]!);
    list.start = Math.max(list.start, end);
    list.matched = true;
    if (list.start >= list.ids.length) this.#byId.delete(id);
  }

  refusal(error: WhiskerError, empty: boolean): void {
    this.#target.refusal(error, empty);
  }

  closed(): void {
    this.#waiting = null;
    this.#replayed.clear();
    this.#byId.clear();
    this.#target.closed?.();
  }
}
