import type { WhiskerError } from '../protocol/errors.js';
import type { ReportError } from './dispatch.js';
import { type Handle, type Settle, type SubscriptionSink } from './subscription.js';
import type { ChannelId, DeliveryInfo, StreamMessage } from './types.js';

/**
 * What a stream's loop has not read yet: the values buffered, the one `next()` waiting for the
 * next value, and the end (with the error the loop throws once the buffer is read). Both streams
 * below read through one.
 */
class Inbox<V> {
  readonly #buffer: V[] = [];
  #waiting: { resolve(result: IteratorResult<V>): void; reject(error: WhiskerError): void } | null = null;
  #failure: WhiskerError | null = null;
  #ended = false;
  /** told of each value as the loop gets it */
  readonly #taken: (value: V) => void;

  constructor(taken: (value: V) => void = () => {}) {
    this.#taken = taken;
  }

  get ended(): boolean {
    return this.#ended;
  }

  put(value: V): void {
    const waiting = this.#waiting;
    if (!waiting) return void this.#buffer.push(value);
    this.#waiting = null;
    this.#taken(value);
    waiting.resolve({ value, done: false });
  }

  next(): Promise<IteratorResult<V>> {
    if (this.#buffer.length > 0) {
      const value = this.#buffer.shift()!;
      this.#taken(value);
      return Promise.resolve({ value, done: false });
    }
    if (this.#failure) {
      const failure = this.#failure;
      this.#failure = null;
      return Promise.reject(failure);
    }
    if (this.#ended) return Promise.resolve({ value: undefined, done: true });
    if (this.#waiting) return Promise.reject(new TypeError('next() called while a previous next() is waiting'));
    return new Promise((resolve, reject) => (this.#waiting = { resolve, reject }));
  }

  /** no value comes any more; `dropBuffered` forgets those not read yet. The first end counts. */
  end(error: WhiskerError | null, dropBuffered: boolean): void {
    if (dropBuffered) this.#buffer.length = 0;
    if (this.#ended) return;
    this.#ended = true;
    const waiting = this.#waiting;
    this.#waiting = null;
    if (error && waiting) waiting.reject(error);
    else if (error) this.#failure = error;
    else waiting?.resolve({ value: undefined, done: true });
  }
}

class Message<T> implements StreamMessage<T> {
  readonly data: T;
  readonly info: DeliveryInfo;
  #settle: Settle | null;

  constructor(data: T, info: DeliveryInfo, settle: Settle) {
    this.data = data;
    this.info = info;
    this.#settle = settle;
  }

  get settled(): boolean {
    return this.#settle === null;
  }

  ack(): void {
    this.#finish(true, 0);
  }

  nack(delaySeconds = 0): void {
    this.#finish(false, Math.max(0, Number(delaySeconds) || 0));
  }

  #finish(ok: boolean, delaySeconds: number): void {
    const settle = this.#settle;
    this.#settle = null;
    settle?.(ok, delaySeconds);
  }
}

/**
 * `for await (const msg of mq.consume(channel))` (docs/client.md#streams). A message not
 * settled when the loop asks for the next one is acked; when the loop ends (break, throw,
 * an abort) the subscription closes, and the broker requeues at once the one in hand and those buffered.
 * A refusal that leaves no id ends the loop with its error; others go to the `error` event.
 */
export class MessageStream<T = unknown> implements AsyncIterableIterator<StreamMessage<T>> {
  #handle: Handle | null = null;
  /** the message the loop holds: acked when it asks for the next one unsettled */
  #current: Message<T> | null = null;
  readonly #inbox = new Inbox<Message<T>>((message) => (this.#current = message));
  readonly #report: ReportError;

  constructor(report: ReportError) {
    this.#report = report;
  }

  /** the subscription's side: where the client delivers */
  readonly sink: SubscriptionSink = {
    message: (data, info, settle) => {
      const message = new Message(data as T, info, settle);
      if (this.#inbox.ended) return message.nack();
      this.#inbox.put(message);
    },
    refusal: (error, empty) => {
      if (!empty) return this.#report(error);
      this.#end(error);
    },
    closed: () => this.#end(null),
  };

  attach(handle: Handle): this {
    this.#handle = handle;
    return this;
  }

  get ids(): string[] {
    return this.#handle!.ids;
  }

  get ready(): Promise<void> {
    return this.#handle!.ready;
  }

  addId(ids: ChannelId | readonly ChannelId[]): Promise<void> {
    return this.#handle!.addId(ids);
  }

  removeId(ids: ChannelId | readonly ChannelId[]): Promise<void> {
    return this.#handle!.removeId(ids);
  }

  /** the handle's flow limit (docs/client.md#flow): messages already buffered stay buffered */
  setLimit(limit: number | null): boolean {
    return this.#handle!.setLimit(limit);
  }

  pause(): boolean {
    return this.#handle!.pause();
  }

  resume(): boolean {
    return this.#handle!.resume();
  }

  /** ends the loop and closes the subscription */
  close(): Promise<void> {
    this.#end(null);
    return this.#handle!.close();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<StreamMessage<T>>> {
    if (this.#current && !this.#current.settled) this.#current.ack();
    this.#current = null;
    return this.#inbox.next();
  }

  async return(): Promise<IteratorResult<StreamMessage<T>>> {
    await this.close();
    return { value: undefined, done: true };
  }

  #end(error: WhiskerError | null): void {
    // not nacked here: closing the subscription requeues at once all it holds (docs/protocol.md#subscribe)
    if (!this.#inbox.ended) this.#current = null;
    this.#inbox.end(error, true);
  }
}

/**
 * `for await (const msg of mq.replay(channel, options))` (docs/client.md#streams): the history in
 * acceptance order, then the loop ends; `done` resolves with the count (or rejects with the
 * replay's error, which the loop throws too). A replay is never acked: `ack`/`nack` do nothing.
 * Ending the loop early (break, throw, `close()`) stops the replay on the broker. Like a listen
 * stream it buffers what the broker sends while the loop body runs: `limit` bounds it.
 */
export class ReplayStream<T = unknown> implements AsyncIterableIterator<StreamMessage<T>> {
  #done: Promise<number> = Promise.resolve(0);
  readonly #inbox = new Inbox<Message<T>>();
  #cancel: () => void = () => {};

  /** where the client delivers the replay */
  readonly sink: SubscriptionSink;

  constructor(report: ReportError) {
    this.sink = {
      message: (data, info) => {
        if (!this.#inbox.ended) this.#inbox.put(new Message(data as T, info, () => {}));
      },
      // some ids refused: the others are replayed; all refused ends the loop with its error instead
      refusal: (error, empty) => void (empty || report(error)),
    };
  }

  /** the replay under way: its end ends the loop */
  begin(done: Promise<number>): this {
    this.#done = done;
    done.then(
      () => this.#inbox.end(null, false),
      (error: WhiskerError) => this.#inbox.end(error, false),
    );
    return this;
  }

  /** resolves with the count once the replay ended (the loop may still be reading what is buffered) */
  get done(): Promise<number> {
    return this.#done;
  }

  /** called by the client once the replay has a sub: how to stop it on the broker */
  onCancel(cancel: () => void): void {
    this.#cancel = cancel;
  }

  /** ends the loop now and stops the replay on the broker; `done` resolves with the count so far */
  close(): Promise<void> {
    if (!this.#inbox.ended) this.#cancel();
    this.#inbox.end(null, true);
    return this.done.then(
      () => undefined,
      () => undefined,
    );
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<StreamMessage<T>>> {
    return this.#inbox.next();
  }

  async return(): Promise<IteratorResult<StreamMessage<T>>> {
    await this.close();
    return { value: undefined, done: true };
  }
}
