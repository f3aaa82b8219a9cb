import { EventEmitter } from 'node:events';
import { ChannelCache, parseChannelSet, unescapeId } from '../protocol/channel.js';
import { DedupeWindow } from '../protocol/dedupe.js';
import { WhiskerError } from '../protocol/errors.js';
import type { Delivery, PublishedMessage } from '../protocol/frames.js';
import { handlerSink } from './dispatch.js';
import { Sets } from './sets.js';
import { MessageIds } from './message-ids.js';
import { clientKeys, clientOptions, type ClientOptions, DEFAULTS } from './options.js';
import { reportedPromise } from './observed.js';
import { Outbox } from './outbox.js';
import { type ReplayHandle, type ReplayOptions, replayFrame, Replays, SeamSink } from './replay.js';
import { MessageStream, ReplayStream } from './stream.js';
import { checkLimit, ClientSubscription, Handle, type SubscriptionHost, type SubscriptionSink } from './subscription.js';
import { UnheardWarnings } from './warnings.js';
import type {
  ChannelArg,
  ChannelString,
  ClientConfig,
  ClientEventName,
  ClientEvents,
  ConsumeHandler,
  ConsumeHandler3,
  ConsumeOptions,
  DeliveryInfo,
  Handler1,
  Handler2,
  ListenHandler,
  ListenOptions,
  Sendable,
  SendCallback,
  SendInfo,
  SendOptions,
} from './types.js';

type ConnectCallback = (err: WhiskerError | null) => void;
type AnyHandler = (...args: never[]) => unknown;

/**
 * Why this file is long: the public client API, each SPEC §3 call with its overloads (callback,
 * promise, stream); brokers, outbox, dispatch, streams and replays are in their own files.
 *
 * The client library (SPEC §3, docs/client.md): one instance talks to every broker in `hosts`
 * at once, sends each message to all of them and takes deliveries from the master.
 */
export class WhiskerClient extends EventEmitter<ClientEvents> {
  #options: ClientOptions | null = null;
  #brokers: Sets | null = null;
  #firstConnect: { hosts: string; clientId: string; outcome: WhiskerError | null | undefined; waiting: ConnectCallback[] } | null = null;
  #disconnected = false;
  #lastEmitted: WhiskerError | null = null;
  readonly #outbox = new Outbox(() => this.#options?.sendTimeoutMs ?? DEFAULTS.sendTimeoutMs);
  /** channels parsed once: a client sends to, and hears from, few of them */
  readonly #channels = new ChannelCache(1024, true);
  /** channels of deliveries: ids stored before control characters were refused still arrive */
  readonly #delivered = new ChannelCache();
  readonly #messageIds = new MessageIds();
  readonly #subscriptions = new Map<number, ClientSubscription>();
  readonly #replays = new Replays();
  #nextSub = 1;
  #processed = new DedupeWindow(DEFAULTS.dedupeWindowSeconds * 1000, Date.now);
  /** delivery keys answered, with the answer (`key|1` acked, `key|0` refused): a copy is answered again */
  #settled = new DedupeWindow(DEFAULTS.dedupeWindowSeconds * 1000, Date.now);
  readonly #host: SubscriptionHost = {
    request: (subscription, build, onMasterReply) => (this.#brokers ? this.#brokers.request(subscription, build, onMasterReply) : onMasterReply(null)),
    forget: (subscription) => {
      this.#subscriptions.delete(subscription.sub);
      this.#brokers?.forget(subscription.sub);
    },
    report: (error) => this.#reportUnobserved(error),
    // not connected yet: the limit goes with the subscription when it is registered
    flow: (sub, limit) => this.#brokers?.flow(sub, limit) ?? true,
  };

  /**
   * Starts connecting to every host. The callback or promise gets the first outcome: null once
   * a broker is connected, else E_TIMEOUT or the refusal; the client keeps trying either way
   * until disconnect(). With an `error` listener, the failure is emitted there too and an
   * unawaited promise never crashes the process (docs/client.md#connect).
   */
  connect(config: ClientConfig): Promise<void>;
  connect(config: ClientConfig, cb: ConnectCallback): void;
  connect(config: ClientConfig, cb?: ConnectCallback): Promise<void> | void {
    // cut short by our own disconnect(): told to the caller, never an `error`, never "unhandled"
    const handled = (err: WhiskerError) => (err.code === 'E_DISCONNECTED' && this.#disconnected) || this.#emitError(err);
    if (cb) return this.#connect(config, (err) => (err && handled(err), cb(err)));
    // told to `error` listeners at once (above); without one, an unawaited failure is a process warning
    let told = false;
    return reportedPromise<void>(
      (resolve, reject) => this.#connect(config, (err) => (err ? ((told = handled(err)), reject(err)) : resolve())),
      (err) => void (told || this.#unheard.warn(err)),
    );
  }

  // typed events: a misspelt name reads as "not assignable to ClientEventName", not as a
  // listener "not assignable to never" (EventEmitter<T> accepts any name)
  override on<E extends ClientEventName>(event: E, listener: (...args: ClientEvents[E]) => void): this {
    return super.on(event as 'connect', listener as () => void);
  }

  override once<E extends ClientEventName>(event: E, listener: (...args: ClientEvents[E]) => void): this {
    return super.once(event as 'connect', listener as () => void);
  }

  override off<E extends ClientEventName>(event: E, listener: (...args: ClientEvents[E]) => void): this {
    return super.off(event as 'connect', listener as () => void);
  }

  // the other Node names Kitten-MQ code uses: the same readable error on a misspelt name
  override addListener<E extends ClientEventName>(event: E, listener: (...args: ClientEvents[E]) => void): this {
    return super.addListener(event as 'connect', listener as () => void);
  }

  override removeListener<E extends ClientEventName>(event: E, listener: (...args: ClientEvents[E]) => void): this {
    return super.removeListener(event as 'connect', listener as () => void);
  }

  override prependListener<E extends ClientEventName>(event: E, listener: (...args: ClientEvents[E]) => void): this {
    return super.prependListener(event as 'connect', listener as () => void);
  }

  override prependOnceListener<E extends ClientEventName>(event: E, listener: (...args: ClientEvents[E]) => void): this {
    return super.prependOnceListener(event as 'connect', listener as () => void);
  }

  /** true while at least one broker is connected */
  isConnected(): boolean {
    return this.#brokers?.isConnected() ?? false;
  }

  send<T = unknown>(channel: ChannelString, data: Sendable<T>): Promise<SendInfo>;
  send<T = unknown>(channel: ChannelString, data: Sendable<T>, options: SendOptions): Promise<SendInfo>;
  send<T = unknown>(channel: ChannelString, data: Sendable<T>, cb: SendCallback): void;
  send<T = unknown>(channel: ChannelString, data: Sendable<T>, options: SendOptions, cb: SendCallback): void;
  send(channel: ChannelString, data: unknown, optionsOrCb?: SendOptions | SendCallback, maybeCb?: SendCallback): Promise<SendInfo> | void {
    const options = typeof optionsOrCb === 'object' && optionsOrCb !== null ? optionsOrCb : {};
    const cb = typeof optionsOrCb === 'function' ? optionsOrCb : maybeCb;
    if (cb) return this.#send(channel, data, options.signal, (err, result, info) => cb(err ? sendError(err, info) : null, result, info));
    // an unawaited send's failure goes to `error` with its message id, never "unhandled" (SPEC §3)
    return reportedPromise<SendInfo>(
      (resolve, reject) => this.#send(channel, data, options.signal, (err, _result, info) => (err ? reject(sendError(err, info)) : resolve(info))),
      this.#reportUnobserved,
    );
  }

  /** A listener gets a copy of every message of its channel (round-robin within one client name). */
  listen<T = unknown>(channel: ChannelArg, options?: ListenOptions): MessageStream<T>;
  listen<T = unknown>(channel: ChannelArg, handler: ListenHandler<T>): Handle;
  listen<T = unknown>(channel: ChannelArg, handler: Handler2<T>): Handle;
  listen(channel: ChannelArg, handler: Handler1): Handle;
  listen<T = unknown>(channel: ChannelArg, options: ListenOptions, handler: ListenHandler<T>): Handle;
  listen<T = unknown>(channel: ChannelArg, options: ListenOptions, handler: Handler2<T>): Handle;
  listen(channel: ChannelArg, options: ListenOptions, handler: Handler1): Handle;
  listen(channel: ChannelArg, a?: ListenOptions | AnyHandler, b?: AnyHandler): Handle | MessageStream {
    return this.#subscribeAny('listen', channel, a, b);
  }

  /** Consumers compete: each message goes to one of them, which acks it with done(). */
  consume<T = unknown>(channel: ChannelArg, options?: ConsumeOptions): MessageStream<T>;
  consume<T = unknown>(channel: ChannelArg, handler: ConsumeHandler<T>): Handle;
  consume<T = unknown>(channel: ChannelArg, handler: ConsumeHandler3<T>): Handle;
  consume<T = unknown>(channel: ChannelArg, handler: Handler2<T>): Handle;
  consume(channel: ChannelArg, handler: Handler1): Handle;
  consume<T = unknown>(channel: ChannelArg, options: ConsumeOptions, handler: ConsumeHandler<T>): Handle;
  consume<T = unknown>(channel: ChannelArg, options: ConsumeOptions, handler: ConsumeHandler3<T>): Handle;
  consume<T = unknown>(channel: ChannelArg, options: ConsumeOptions, handler: Handler2<T>): Handle;
  consume(channel: ChannelArg, options: ConsumeOptions, handler: Handler1): Handle;
  consume(channel: ChannelArg, a?: ConsumeOptions | AnyHandler, b?: AnyHandler): Handle | MessageStream {
    return this.#subscribeAny('consume', channel, a, b);
  }

  /**
   * Fire and forget (docs/client.md#publish): stored and checked like a send, but it returns at
   * once and never rejects; a failure reaches the `error` event with the message id and channel.
   */
  publish<T = unknown>(channel: ChannelString, data: Sendable<T>): void {
    this.#send(channel, data, undefined, (err, _result, info) => {
      if (err) this.#emitError(sendError(err, info), true);
    });
  }

  /**
   * Replays a retained channel's history (docs/client.md#replay): `handler(err, msg, info)` per
   * message in acceptance order per id, then `done` resolves with the count (or `cb(err, count)`).
   * It never touches the live queue: nothing is acked, other consumers are not affected.
   */
  replay<T = unknown>(channel: ChannelArg, options?: ReplayOptions): ReplayStream<T>;
  replay<T = unknown>(channel: ChannelArg, options: ReplayOptions, handler: ListenHandler<T> | Handler2<T> | Handler1, cb?: (err: WhiskerError | null, count: number) => void): ReplayHandle;
  replay<T = unknown>(channel: ChannelArg, options: ReplayOptions = {}, handler?: ListenHandler<T> | Handler2<T> | Handler1, cb?: (err: WhiskerError | null, count: number) => void): ReplayHandle | ReplayStream<T> {
    const report = (error: WhiskerError) => void this.#emitError(error, true);
    if (handler === undefined) {
      // the stream form: a bad channel or option ends the loop with its error, as it rejects `done` in the handler form
      const stream = new ReplayStream<T>(report);
      const done = this.#replay(channel, options, stream.sink, undefined, (cancel) => stream.onCancel(cancel));
      done.catch(() => {}); // the loop throws the error; an unobserved `done` must not crash
      return stream.begin(done);
    }
    if (typeof handler !== 'function') throw new WhiskerError('E_BAD_ARGUMENT', 'replay needs a handler function');
    const sink = handlerSink('listen', handler as ListenHandler, report, () => 0);
    const done = this.#replay(channel, options, sink);
    if (cb) {
      done.then((count) => cb(null, count), (error: WhiskerError) => cb(error, 0)); // handles `done` too
      return { done };
    }
    // the handle's promise: a caller that never looks at it gets the failure on `error`
    return { done: reportedPromise<number>((resolve, reject) => done.then(resolve, reject), report) };
  }

  #replay(channel: unknown, options: ReplayOptions, sink: SubscriptionSink, seam?: SeamSink, cancellable?: (cancel: () => void) => void): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      let frame: (req: number) => ReturnType<typeof replayFrame>;
      try {
        const set = parseChannelSet(channel, true);
        replayFrame(0, 0, set, options); // checks the options now
        const sub = this.#nextSub++;
        frame = (req) => replayFrame(req, sub, set, options);
        const target: SubscriptionSink = seam
          ? { message: (data, info, settle) => (seam.replayed(info.messageId, info.channel.id), sink.message(data, info, settle)), refusal: (e, empty) => sink.refusal(e, empty) }
          : sink;
        this.#replays.add(sub, target, set.ids.length, (error, count) => (error ? reject(error) : resolve(count)));
        if (this.#disconnected || !this.#brokers) return this.#replays.fail([sub], new WhiskerError('E_DISCONNECTED', 'Client not connected'));
        this.#brokers.replay(`${set.endpoint}/${set.version}`, sub, frame, (reply) => this.#replays.replied(sub, reply));
        cancellable?.(() => this.#brokers?.cancelReplay(sub));
      } catch (error) {
        reject(error instanceof WhiskerError ? error : new WhiskerError('E_BAD_ARGUMENT', (error as Error).message));
      }
    });
  }

  /** closes every socket and subscription; sends still waiting fail with E_DISCONNECTED */
  disconnect(): Promise<void>;
  disconnect(cb: (err: null) => void): void;
  disconnect(cb?: (err: null) => void): Promise<void> | void {
    const done = reportedPromise<void>((resolve, reject) => void this.#disconnect().then(resolve, reject), this.#reportUnobserved);
    if (!cb) return done;
    void done.then(() => cb(null));
  }

  async #disconnect(): Promise<void> {
    const wasOpen = !this.#disconnected;
    this.#disconnected = true;
    this.#outbox.failAll(new WhiskerError('E_DISCONNECTED', 'Client disconnected'));
    this.#replays.failAll(new WhiskerError('E_DISCONNECTED', 'Client disconnected'));
    for (const subscription of this.#subscriptions.values()) subscription.sink.closed?.();
    await this.#brokers?.close();
    if (wasOpen) this.emit('disconnect');
  }

  // ---- connecting ----------------------------------------------------------------------

  #connect(config: ClientConfig, cb: ConnectCallback): void {
    const fail = (error: WhiskerError) => void setImmediate(() => cb(error));
    if (this.#disconnected) return fail(new WhiskerError('E_DISCONNECTED', 'Client disconnected: make a new client() to connect again'));
    if (this.#brokers) return this.#connectAgain(config, cb);
    let options: ClientOptions;
    let keys;
    try {
      options = clientOptions(config);
      keys = clientKeys(config, (path) => process.emitWarning(`made a new key pair ${path} for client "${options.clientId}": the broker pins the first key a name uses (docs/client.md#keys)`, 'WhiskerWarning'));
    } catch (error) {
      return fail(error instanceof WhiskerError ? error : new WhiskerError('E_BAD_ARGUMENT', (error as Error).message));
    }
    this.#options = options;
    this.#processed = new DedupeWindow(options.dedupeWindowSeconds * 1000, Date.now);
    this.#settled = new DedupeWindow(options.dedupeWindowSeconds * 1000, Date.now);
    this.#brokers = new Sets(options, keys, {
      subscriptions: () => this.#subscriptions.values(),
      outbox: this.#outbox,
      onDelivery: (delivery) => this.#onDelivery(delivery),
      onRevoked: (sub, ids, error) => this.#subscriptions.get(sub)?.revoked(ids, error),
      onReplayEnd: (frame) => this.#replays.ended(frame),
      onReplaysLost: (subs, error) => this.#replays.fail(subs, error),
      emit: (event, ...args) => this.#emitEvent(event, args),
      onError: (error) => void this.#emitError(error),
    });
    this.#firstConnect = { hosts: config.hosts.join(' '), clientId: config.clientId, outcome: undefined, waiting: [] };
    const first = this.#firstConnect;
    this.#brokers.start((err) => {
      first.outcome = err;
      cb(err);
      for (const waiting of first.waiting.splice(0)) waiting(err);
    });
  }

  /**
   * connect() again with the same hosts and clientId joins the first call (the Kitten-MQ README
   * calls it twice); with others it is E_ALREADY_CONNECTED: one client is one set of connections.
   */
  #connectAgain(config: ClientConfig, cb: ConnectCallback): void {
    const first = this.#firstConnect!;
    if (!Array.isArray(config?.hosts) || config.hosts.join(' ') !== first.hosts || config.clientId !== first.clientId) {
      return void setImmediate(() => cb(new WhiskerError('E_ALREADY_CONNECTED', 'connect() was already called on this client with other hosts or clientId: make a new client()')));
    }
    if (first.outcome === undefined) return void first.waiting.push(cb);
    this.#brokers!.retryRefused();
    const outcome = this.isConnected() ? null : first.outcome;
    setImmediate(() => cb(outcome));
  }

  #emitEvent(event: 'connect' | 'reconnect' | 'disconnect' | 'master' | 'stale', args: unknown[]): void {
    if (event === 'disconnect' && this.#disconnected) return;
    (this.emit as (event: string, ...args: unknown[]) => boolean)(event, ...args);
  }

  readonly #unheard = new UnheardWarnings();

  /** a promise nobody awaited failed: its error goes to `error`, or is a process warning */
  readonly #reportUnobserved = (error: WhiskerError): void => void this.#emitError(error, true);

  /** to the `error` listeners, if there are any; false when nobody listens */
  #emitError(error: WhiskerError, warnIfUnheard = false): boolean {
    if (this.listenerCount('error') > 0) {
      // a refusal that fails connect() is also the broker's: told once (docs/client.md#errors)
      if (error === this.#lastEmitted) return true;
      this.#lastEmitted = error;
      this.emit('error', error);
      return true;
    }
    // EventEmitter throws an unheard `error`: a library must not crash its process for it
    if (warnIfUnheard) this.#unheard.warn(error);
    return false;
  }

  // ---- sending --------------------------------------------------------------------------

  #send(channel: unknown, data: unknown, signal: AbortSignal | undefined, cb: SendCallback): void {
    const messageId = this.#messageIds.next();
    let parsed;
    try {
      parsed = this.#channels.parse(channel);
    } catch (error) {
      return cb(error as WhiskerError, null, { messageId, channel: undefined as unknown as SendInfo['channel'] });
    }
    const info: SendInfo = { messageId, channel: { endpoint: parsed.endpoint, version: parsed.version, id: parsed.rawId } };
    const fail = (code: WhiskerError['code'], message: string) => cb(new WhiskerError(code, message), null, info);
    if (data === null || data === undefined) return fail('E_NO_VALUE', 'Bad format');
    let json: string | undefined;
    try {
      json = JSON.stringify(data);
    } catch {
      json = undefined;
    }
    if (json === undefined) return fail('E_NO_VALUE', 'Bad format');
    const maxBytes = this.#brokers?.maxMessageBytes ?? 1_048_576 - 512;
    const bytes = Buffer.byteLength(json) + Buffer.byteLength(channel as string) + 120; // + the message's envelope
    if (bytes > maxBytes) return fail('E_TOO_LARGE', `Message too large (over ${maxBytes} bytes)`);
    if (this.#disconnected) return fail('E_DISCONNECTED', 'Client disconnected');
    if (signal?.aborted) return fail('E_ABORTED', 'Send aborted before it was sent');
    const maxBuffered = this.#options?.maxBufferedMessages ?? DEFAULTS.maxBufferedMessages;
    if (this.#outbox.size >= maxBuffered) return fail('E_QUEUE_FULL', 'Too many messages waiting for a broker');
    // every broker refused this key and none is dialed before authRetryMs: no broker will take it
    const refused = this.#brokers?.keyRefusal();
    if (refused) return cb(refused, null, info);
    const message: PublishedMessage = { messageId, channel: channel as string, data, created: Date.now() };
    const pending = this.#outbox.add(message, bytes, info.channel, cb, signal);
    this.#brokers?.publish(pending);
  }

  // ---- subscriptions and deliveries --------------------------------------------------------

  #subscribeAny(mode: 'listen' | 'consume', channel: unknown, a: ConsumeOptions | AnyHandler | undefined, b: AnyHandler | undefined): Handle | MessageStream {
    const handler = typeof a === 'function' ? a : b;
    const options: ConsumeOptions = (typeof a === 'object' && a !== null ? a : {}) as ConsumeOptions;
    const prefetch = mode === 'consume' ? options.prefetch : undefined;
    if (prefetch !== undefined && (!Number.isSafeInteger(prefetch) || prefetch < 1)) throw new WhiskerError('E_BAD_ARGUMENT', 'prefetch must be a positive integer');
    const limit = options.limit === undefined ? null : checkLimit(options.limit);
    if (handler !== undefined && typeof handler !== 'function') throw new WhiskerError('E_BAD_ARGUMENT', `${mode} needs a handler function`);
    if ((options as ListenOptions).since !== undefined && (mode !== 'listen' || !handler)) throw new WhiskerError('E_BAD_ARGUMENT', 'since is for listen with a handler (a replay feeds listeners, not consumers)');
    const report = (error: WhiskerError) => void this.#emitError(error, true);
    if (handler) {
      const retry = this.#options?.handlerRetry ?? DEFAULTS.handlerRetry;
      const delay = (n: number) => Math.min(retry.maxSeconds, retry.initialSeconds * retry.factor ** n);
      const sink = handlerSink(mode, handler as ListenHandler | ConsumeHandler, report, delay);
      if (mode === 'listen' && options.since !== undefined) return this.#listenSince(channel, options.since, limit, options.signal, sink, report);
      return this.#subscribe(mode, channel, prefetch, limit, options.signal, sink);
    }
    const stream = new MessageStream(report);
    return stream.attach(this.#subscribe(mode, channel, prefetch, limit, options.signal, stream.sink));
  }

  /**
   * listen({ since }): the live subscription first, its messages held back; then the history
   * since then; then what was held back, less what the replay gave (no gap, no duplicate).
   */
  #listenSince(channel: unknown, since: NonNullable<ListenOptions['since']>, limit: number | null, signal: AbortSignal | undefined, sink: SubscriptionSink, report: (error: WhiskerError) => void): Handle {
    const seam = new SeamSink(sink);
    const handle = this.#subscribe('listen', channel, undefined, limit, signal, seam);
    handle.ready
      .then(() => this.#replay(channel, { since }, sink, seam))
      .catch((error: WhiskerError) => report(error))
      .finally(() => seam.open());
    return handle;
  }

  #subscribe(mode: 'listen' | 'consume', channel: unknown, prefetch: number | undefined, limit: number | null, signal: AbortSignal | undefined, sink: SubscriptionSink): Handle {
    let set;
    try {
      set = parseChannelSet(channel, true);
    } catch (error) {
      return new Handle(new ClientSubscription(this.#host, 0, mode, { endpoint: '-', version: '-', ids: [] }, prefetch, sink, error as WhiskerError));
    }
    const subscription = new ClientSubscription(this.#host, this.#nextSub++, mode, set, prefetch, sink, null, limit);
    const handle = new Handle(subscription);
    if (signal?.aborted) {
      handle.close(() => {});
      return handle;
    }
    this.#subscriptions.set(subscription.sub, subscription);
    signal?.addEventListener('abort', () => handle.close(() => {}), { once: true });
    this.#brokers?.subscribe(subscription);
    return handle;
  }

  #onDelivery(delivery: Delivery): void {
    if (this.#replays.has(delivery.sub)) {
      let parsed;
      try {
        parsed = this.#delivered.parse(delivery.channel);
      } catch {
        return;
      }
      const channel = { endpoint: parsed.endpoint, version: parsed.version, id: parsed.rawId };
      const info = withTouch({ messageId: delivery.messageId, channel, subscribedId: subscribedId(delivery.via), created: delivery.created, nbRequeues: 0, from: delivery.from }, () => false);
      return this.#replays.deliver(delivery.sub, delivery.data, info);
    }
    const subscription = this.#subscriptions.get(delivery.sub);
    if (!subscription) return; // closed: the broker requeues what it had in flight
    // per subscribed id (`via`): each copy of a message sent to `*` arrives (SPEC §3)
    const message = `${delivery.sub}|${delivery.via}|${delivery.messageId}`;
    const acked = `${message}|acked`;
    const key = `${message}|${delivery.nbRequeues}`;
    const ack = (ok: boolean, delaySeconds: number) => this.#brokers?.settle(delivery, ok, delaySeconds);
    // handled and acked already, whatever the count: a broker gives it again because the ack was
    // lost with a connection (it requeued it, nbRequeues + 1) or from its own record at a
    // handover. SPEC §3: dropped, and acked again. A nacked one comes back, as the nack asks.
    if (this.#settled.has(acked)) {
      ack(true, 0);
      return;
    }
    if (this.#processed.has(key)) {
      // acks are idempotent: a copy of what was settled (a broker restarted before it saw the
      // ack) gets the same answer, else it would sit in flight until requeueInterval (issue 13);
      // an acked one was answered above (`acked` is kept as long as this key would be)
      if (this.#settled.has(`${key}|0`)) ack(false, 0);
      return; // still in the handler: its done() acks to every broker, this one included
    }
    this.#processed.add(key);
    let channel: DeliveryInfo['channel'];
    try {
      const parsed = this.#delivered.parse(delivery.channel);
      channel = { endpoint: parsed.endpoint, version: parsed.version, id: parsed.rawId };
    } catch {
      return;
    }
    let settled = false;
    const touch = () => !settled && (this.#brokers?.touch(delivery) ?? false);
    const info = withTouch({ messageId: delivery.messageId, channel, subscribedId: subscribedId(delivery.via), created: delivery.created, nbRequeues: delivery.nbRequeues, from: delivery.from }, touch);
    subscription.sink.message(delivery.data, info, (ok, delaySeconds) => {
      settled = true;
      // an ack is remembered by `acked` alone (it answers every copy, whatever its count); a nack by its key
      this.#settled.add(ok ? acked : `${key}|0`);
      ack(ok, delaySeconds);
    });
  }
}

/** the subscribed id a delivery came through, as the user means it; `*` for a subscription to every id */
function subscribedId(via: string): string {
  try {
    return unescapeId(via);
  } catch {
    return via;
  }
}

/**
 * A failed send's own error, its `info` attached (`err.info`, docs/client.md#send): sends failed
 * together (disconnect, every broker refusing the key) were handed one error object, and
 * `Object.assign(err, { info })` left each with the last one's info
 */
function sendError(err: WhiskerError, info: SendInfo): WhiskerError & { info: SendInfo } {
  const own = new WhiskerError(err.code, err.message, err.details, err.cause === undefined ? undefined : { cause: err.cause });
  if (err.stack) own.stack = err.stack;
  return Object.assign(own, { info });
}

/** `info.touch`, not enumerable: `console.log(info)` and `{ ...info }` show the data only */
function withTouch(fields: Omit<DeliveryInfo, 'touch'>, touch: () => boolean): DeliveryInfo {
  return Object.defineProperty(fields, 'touch', { value: touch, enumerable: false }) as DeliveryInfo;
}

/** A new, unconnected client (SPEC §3). */
export function client(): WhiskerClient {
  return new WhiskerClient();
}
