import { EventEmitter } from 'node:events';
import { resolve } from 'node:path';
import { type CachedChannel, type Channel, ChannelCache, parseChannelSet } from '../protocol/channel.js';
import { DedupeWindow } from '../protocol/dedupe.js';
import { errorFromPayload, WhiskerError } from '../protocol/errors.js';
import type { BrokerFrame, ClientFrame, Delivery, PublishedMessage, PublishResult, ReplyFrame } from '../protocol/frames.js';
import { Connection, type ConnectionOwner } from '../link/connection.js';
import { parseHost } from '../link/hosts.js';
import { type ClientKeys, loadOrCreateKeys } from '../link/keys.js';
import { MessageIds } from './message-ids.js';
import {
  ClientSubscription,
  type ConsumeHandler,
  type DeliveryInfo,
  type Done,
  Handle,
  type ListenHandler,
  type SubscriptionHost,
} from './subscription.js';

export interface ClientConfig {
  hosts: string[];
  clientId: string;
  keysDirectory?: string;
  keysName?: string;
  /** ms; default 10,000 */
  connectTimeout?: number;
  /** ms; default 30,000 */
  sendTimeout?: number;
  /** sends waiting for a broker's answer; default 10,000 */
  maxBufferedMessages?: number;
  /** seconds a delivered message id is remembered, against a second master; default 120 */
  dedupeWindow?: number;
  reconnect?: { initialMs?: number; maxMs?: number; factor?: number };
  tls?: { ca?: string | Buffer; rejectUnauthorized?: boolean };
}

export interface SendInfo {
  messageId: string;
  channel: Channel;
  /** serviceIds of the slaves that stored the message, when the master did not answer */
  storedBy?: string[];
}

export type SendCallback = (err: WhiskerError | null, result: null, info: SendInfo) => void;

interface PendingSend {
  readonly message: PublishedMessage;
  readonly bytes: number;
  readonly channel: Channel;
  readonly answeredBy: Set<Connection>;
  readonly storedBy: Set<string>;
  readonly cb: SendCallback;
}

const DEFAULTS = { connectTimeout: 10_000, sendTimeout: 30_000, maxBufferedMessages: 10_000, dedupeWindow: 120 };
const SWEEP_MS = 100;

/**
 * Why this file is long: the public client API, one method per SPEC §3 call with its callback
 * and promise forms; connections and subscriptions are in their own files.
 *
 * The client library (SPEC §3): one instance talks to every broker in `hosts` at once, sends
 * each message to all of them and takes deliveries from the master.
 */
export class WhiskerClient extends EventEmitter implements SubscriptionHost {
  #config: Required<Pick<ClientConfig, 'connectTimeout' | 'sendTimeout' | 'maxBufferedMessages'>> & ClientConfig = { hosts: [], clientId: '', ...DEFAULTS };
  #connections: Connection[] = [];
  #keys: ClientKeys | null = null;
  readonly #pending = new Map<string, PendingSend>();
  /** channels parsed once: a client sends to, and hears from, few of them */
  readonly #channels = new ChannelCache();
  readonly #messageIds = new MessageIds();
  readonly #subscriptions = new Map<number, ClientSubscription>();
  #nextSub = 1;
  #sweeper: NodeJS.Timeout | null = null;
  #master: Connection | null = null;
  #wasConnected = false;
  #everConnected = false;
  #disconnected = false;
  #maxMessageBytes = 1_048_576 - 512;
  #processed = new DedupeWindow(DEFAULTS.dedupeWindow * 1000, Date.now);

  connect(config: ClientConfig): Promise<void>;
  connect(config: ClientConfig, cb: (err: WhiskerError | Error | null) => void): void;
  connect(config: ClientConfig, cb?: (err: WhiskerError | Error | null) => void): Promise<void> | void {
    if (!cb) return new Promise((res, rej) => this.connect(config, (err) => (err ? rej(err) : res())));
    try {
      this.#start(config, cb);
    } catch (error) {
      cb(error as Error);
    }
  }

  isConnected(): boolean {
    return this.#connections.some((c) => c.isReady);
  }

  send(channel: string, data: unknown): Promise<SendInfo>;
  send(channel: string, data: unknown, cb: SendCallback): void;
  send(channel: string, data: unknown, cb?: SendCallback): Promise<SendInfo> | void {
    if (!cb) {
      return new Promise((res, rej) => this.send(channel, data, (err, _r, info) => (err ? rej(Object.assign(err, { info })) : res(info))));
    }
    const messageId = this.#messageIds.next();
    let parsed: CachedChannel;
    try {
      parsed = this.#channels.parse(channel);
    } catch (error) {
      return cb(error as WhiskerError, null, { messageId, channel: undefined as unknown as Channel });
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
    const maxBytes = this.#maxMessageBytes;
    const bytes = Buffer.byteLength(json) + Buffer.byteLength(channel) + 120; // + the message's envelope
    if (bytes > maxBytes) return fail('E_TOO_LARGE', `Message too large (over ${maxBytes} bytes)`);
    if (this.#disconnected) return fail('E_DISCONNECTED', 'Client disconnected');
    if (this.#pending.size >= this.#config.maxBufferedMessages) return fail('E_QUEUE_FULL', 'Too many messages waiting for a broker');
    const message: PublishedMessage = { messageId, channel, data, created: Date.now() };
    const pending: PendingSend = {
      message,
      bytes,
      channel: info.channel,
      answeredBy: new Set(),
      storedBy: new Set(),
      cb,
    };
    this.#pending.set(messageId, pending);
    for (const connection of this.#connections) if (connection.isReady) connection.queuePublish(message, pending.bytes);
    this.#armSweeper();
  }

  listen(channel: unknown, handler: ListenHandler): Handle {
    return this.#subscribe('listen', channel, undefined, handler);
  }

  consume(channel: unknown, handler: ConsumeHandler): Handle;
  consume(channel: unknown, options: { prefetch?: number }, handler: ConsumeHandler): Handle;
  consume(channel: unknown, optionsOrHandler: { prefetch?: number } | ConsumeHandler, maybeHandler?: ConsumeHandler): Handle {
    const handler = typeof optionsOrHandler === 'function' ? optionsOrHandler : maybeHandler;
    const options = typeof optionsOrHandler === 'function' ? {} : optionsOrHandler;
    if (typeof handler !== 'function') throw new TypeError('consume needs a handler');
    const prefetch = options.prefetch;
    if (prefetch !== undefined && (!Number.isSafeInteger(prefetch) || prefetch < 1)) throw new TypeError('prefetch must be a positive integer');
    return this.#subscribe('consume', channel, prefetch, handler);
  }

  /** closes every socket; sends still waiting fail with E_DISCONNECTED */
  disconnect(cb?: (err: null) => void): Promise<void> | void {
    const done = (async () => {
      this.#disconnected = true;
      if (this.#sweeper) clearInterval(this.#sweeper);
      this.#sweeper = null;
      const pending = [...this.#pending.values()];
      this.#pending.clear();
      for (const p of pending) this.#finish(p, new WhiskerError('E_DISCONNECTED', 'Client disconnected'));
      await Promise.all(this.#connections.map((c) => c.close()));
      this.emit('disconnect');
    })();
    if (!cb) return done;
    void done.then(() => cb(null));
  }

  // ---- SubscriptionHost ---------------------------------------------------------------

  request(build: (req: number) => ClientFrame, onMasterReply: (reply: ReplyFrame | null) => void): void {
    const master = this.#master;
    for (const connection of this.#connections) {
      if (!connection.isReady) continue;
      connection.request(build, connection === master ? onMasterReply : () => {});
    }
    if (!master) onMasterReply(null);
  }

  forget(subscription: ClientSubscription): void {
    this.#subscriptions.delete(subscription.sub);
  }

  // ---- connections ---------------------------------------------------------------------

  #start(config: ClientConfig, cb: (err: WhiskerError | Error | null) => void): void {
    if (this.#connections.length > 0) throw new Error('connect() was already called');
    if (!Array.isArray(config?.hosts) || config.hosts.length === 0) throw new TypeError('hosts must list at least one broker');
    if (typeof config.clientId !== 'string' || !/^(?!\.+$)[A-Za-z0-9._-]{1,128}$/.test(config.clientId)) throw new TypeError('clientId must match ^[A-Za-z0-9._-]{1,128}$');
    this.#config = { ...DEFAULTS, ...config };
    this.#processed = new DedupeWindow(this.#config.dedupeWindow! * 1000, Date.now);
    this.#keys = loadOrCreateKeys(resolve(config.keysDirectory ?? 'keys'), config.keysName ?? 'client');
    const owner = this.#owner(this.#keys);
    this.#connections = config.hosts.map((spec) => new Connection(parseHost(spec), owner));

    // cb fires once: when every host has answered, or at connectTimeout (SPEC §3)
    const answered = new Map<Connection, WhiskerError | null>();
    let called = false;
    const settle = () => {
      if (called) return;
      const connected = this.isConnected();
      const allAnswered = answered.size === this.#connections.length;
      if (!allAnswered && !timedOut) return;
      if (!connected && !timedOut && [...answered.values()].some((e) => e === null || isNetworkError(e))) return;
      called = true;
      clearTimeout(timer);
      if (connected) return cb(null);
      const refusal = [...answered.values()].find((e) => e && !isNetworkError(e));
      cb(refusal ?? new WhiskerError('E_TIMEOUT', `No broker reachable within ${this.#config.connectTimeout} ms`));
    };
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      settle();
    }, this.#config.connectTimeout);
    this.#onAnswer = (connection, error) => {
      if (!answered.has(connection) || answered.get(connection) !== null) answered.set(connection, error);
      settle();
    };
    for (const connection of this.#connections) connection.start();
  }

  #onAnswer: (connection: Connection, error: WhiskerError | null) => void = () => {};

  #owner(keys: ClientKeys): ConnectionOwner {
    const config = this.#config;
    return {
      clientId: config.clientId,
      keys,
      tls: config.tls,
      reconnect: { initialMs: 200, maxMs: 20_000, factor: 1.5, ...config.reconnect },
      onReady: (connection) => this.#connectionReady(connection),
      onDown: (connection, error) => this.#connectionDown(connection, error),
      onFrame: (connection, frame) => this.#onFrame(connection, frame),
    };
  }

  #connectionReady(connection: Connection): void {
    // a broker announces its frame limit in `welcome`: the smallest one bounds every send
    this.#maxMessageBytes = Math.min(...this.#connections.map((c) => c.maxPayloadBytes), 1_048_576) - 512;
    for (const subscription of this.#subscriptions.values()) {
      connection.request(
        (req) => subscription.subscribeFrame(req),
        (reply) => (connection.isMaster ? subscription.onMasterReply(reply) : undefined),
      );
    }
    for (const pending of this.#pending.values()) {
      if (!pending.answeredBy.has(connection)) connection.queuePublish(pending.message, pending.bytes);
    }
    this.#updateMaster();
    this.#onAnswer(connection, null);
    if (!this.#wasConnected) {
      this.#wasConnected = true;
      this.emit(this.#everConnected ? 'reconnect' : 'connect');
      this.#everConnected = true;
    } else {
      this.emit('reconnect', connection.serviceId);
    }
  }

  #connectionDown(connection: Connection, error: WhiskerError | null): void {
    this.#onAnswer(connection, error ?? new WhiskerError('E_DISCONNECTED', `Cannot reach ${connection.target.spec}`));
    if (error && this.listenerCount('error') > 0) this.emit('error', error);
    this.#updateMaster();
    if (this.#wasConnected && !this.isConnected()) {
      this.#wasConnected = false;
      if (!this.#disconnected) this.emit('disconnect');
    }
  }

  #updateMaster(): void {
    const master = this.#connections.find((c) => c.isMaster) ?? null;
    if (master === this.#master) return;
    this.#master = master;
    this.emit('master', master?.serviceId ?? null);
  }

  #onFrame(connection: Connection, frame: BrokerFrame): void {
    switch (frame.type) {
      case 'results':
        this.#onResults(connection, frame.results);
        return;
      case 'deliver':
        for (const delivery of frame.messages) this.#onDelivery(delivery);
        return;
      case 'role':
        this.#updateMaster();
        if (connection.isMaster) {
          // a promoted slave already holds every subscription and every send it stored as a slave
          for (const subscription of this.#subscriptions.values()) subscription.onMasterReply({ type: 'reply', req: 0 });
          for (const [messageId, pending] of this.#pending) {
            if (!pending.storedBy.has(connection.serviceId)) continue;
            this.#pending.delete(messageId);
            this.#finish(pending, null);
          }
        }
        return;
      case 'revoked': {
        const subscription = this.#subscriptions.get(frame.sub);
        if (!subscription) return;
        subscription.removeRefused(frame.ids);
        subscription.refuse(errorFromPayload(frame.error));
        return;
      }
      default:
        return;
    }
  }

  #onResults(connection: Connection, results: readonly PublishResult[]): void {
    for (const result of results) {
      const pending = this.#pending.get(result.messageId);
      if (!pending) continue;
      pending.answeredBy.add(connection);
      // a master at soft-stop refuses: with mirrors, the send waits for the next master (SPEC §9)
      if (connection.isMaster && result.error?.code === 'E_STOPPING' && this.#connections.length > 1) continue;
      if (connection.isMaster) {
        this.#pending.delete(result.messageId);
        this.#finish(pending, result.error ? errorFromPayload(result.error) : null);
      } else if (!result.error) {
        pending.storedBy.add(connection.serviceId);
      }
    }
  }

  #finish(pending: PendingSend, error: WhiskerError | null): void {
    const info: SendInfo = { messageId: pending.message.messageId, channel: pending.channel };
    if (error && pending.storedBy.size > 0) info.storedBy = [...pending.storedBy];
    pending.cb(error, null, info);
  }

  #armSweeper(): void {
    if (this.#sweeper) return;
    this.#sweeper = setInterval(() => this.#sweep(), SWEEP_MS);
  }

  /** sends still unanswered by a master at their deadline fail with E_NO_MASTER (SPEC §3) */
  #sweep(): void {
    const now = Date.now();
    for (const [messageId, pending] of this.#pending) {
      if (pending.message.created + this.#config.sendTimeout > now) continue;
      this.#pending.delete(messageId);
      this.#finish(pending, new WhiskerError('E_NO_MASTER', 'No master broker answered in time'));
    }
    if (this.#pending.size === 0 && this.#sweeper) {
      clearInterval(this.#sweeper);
      this.#sweeper = null;
    }
  }

  // ---- subscriptions and deliveries --------------------------------------------------------

  #subscribe(mode: 'listen' | 'consume', channel: unknown, prefetch: number | undefined, handler: ListenHandler | ConsumeHandler): Handle {
    if (typeof handler !== 'function') throw new TypeError(`${mode} needs a handler`);
    let set;
    try {
      set = parseChannelSet(channel);
    } catch (error) {
      const dead = new ClientSubscription(this, 0, mode, { endpoint: '-', version: '-', ids: [] }, prefetch, handler);
      setImmediate(() => dead.refuse(error as WhiskerError));
      return new Handle(dead);
    }
    const subscription = new ClientSubscription(this, this.#nextSub++, mode, set, prefetch, handler);
    this.#subscriptions.set(subscription.sub, subscription);
    const master = this.#master;
    for (const connection of this.#connections) {
      if (!connection.isReady) continue;
      connection.request(
        (req) => subscription.subscribeFrame(req),
        (reply) => (connection === master ? subscription.onMasterReply(reply) : undefined),
      );
    }
    return new Handle(subscription);
  }

  #onDelivery(delivery: Delivery): void {
    const subscription = this.#subscriptions.get(delivery.sub);
    if (!subscription) return; // closed: the broker requeues what it had in flight
    const key = `${delivery.sub}|${delivery.via}|${delivery.messageId}|${delivery.nbRequeues}`;
    if (this.#processed.has(key)) return;
    this.#processed.add(key);
    let channel: DeliveryInfo['channel'];
    try {
      const parsed = this.#channels.parse(delivery.channel);
      channel = { endpoint: parsed.endpoint, version: parsed.version, id: parsed.rawId };
    } catch {
      return;
    }
    const info: DeliveryInfo = { messageId: delivery.messageId, channel, created: delivery.created, nbRequeues: delivery.nbRequeues, from: delivery.from };
    const ack = (ok: boolean, delaySeconds: number) => {
      const frame = { sub: delivery.sub, messageId: delivery.messageId, via: delivery.via, ok, ...(delaySeconds > 0 ? { delaySeconds } : {}) };
      for (const connection of this.#connections) if (connection.isReady) connection.queueAck(frame);
    };
    if (subscription.mode === 'listen') {
      try {
        (subscription.handler as ListenHandler)(null, delivery.data, info);
      } finally {
        ack(true, 0);
      }
      return;
    }
    let settled = false;
    const done: Done = (ok = true, delaySeconds = 0) => {
      if (settled) return;
      settled = true;
      ack(ok !== false, ok === false ? Math.max(0, Number(delaySeconds) || 0) : 0);
    };
    let result: unknown;
    try {
      result = (subscription.handler as ConsumeHandler)(null, delivery.data, done, info);
    } catch (error) {
      done(false);
      throw error;
    }
    if (result && typeof (result as Promise<unknown>).then === 'function') {
      (result as Promise<unknown>).then(() => done(true), () => done(false));
    }
  }
}

function isNetworkError(error: WhiskerError): boolean {
  return error.code === 'E_DISCONNECTED';
}

/** A new, unconnected client (SPEC §3). */
export function client(): WhiskerClient {
  return new WhiskerClient();
}
