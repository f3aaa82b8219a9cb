import type { WhiskerError } from '../protocol/errors.js';

/**
 * The client library's public types (docs/client.md). Only plain types here, so the published
 * declarations need nothing beyond `@types/node` in the user's project.
 */

/** `endpoint/version/id`; `id` may be `*` (SPEC §2). Checked again at run time. */
export type ChannelString = `${string}/${string}/${string}`;

/** an id as the user means it; numbers are compared as strings (`1` and `'1'` are one id) */
export type ChannelId = string | number;

/** the object form of listen/consume: `ids` may be one id, a list, or an empty list for addId */
export interface ChannelObject {
  endpoint: string;
  version: string;
  ids: ChannelId | readonly ChannelId[];
}

export type ChannelArg = ChannelString | ChannelObject;

export interface ClientConfig {
  /** `host:port@serviceId#token`, or with a scheme `ws://` / `wss://` */
  hosts: string[];
  /** the client name that rules and keys are about: `^[A-Za-z0-9._-]{1,128}$` */
  clientId: string;
  /** folder of the key pair files; relative to `process.cwd()` at connect(); default `keys` */
  keysDirectory?: string;
  /** key pair file names `<keysName>.pem` and `<keysName>.pub`; default `client` */
  keysName?: string;
  /** the private key as PEM text (a secret, an environment variable): no key file is read or made */
  privateKey?: string | Buffer;
  /** the public key as PEM text; derived from `privateKey` when absent */
  publicKey?: string | Buffer;
  /** ms; default 10,000 */
  connectTimeout?: number;
  /** ms; default 30,000 */
  sendTimeout?: number;
  /** sends waiting for a broker's answer; default 10,000 */
  maxBufferedMessages?: number;
  /** seconds a delivered message id is remembered, against a second master; default 120 */
  dedupeWindow?: number;
  /** `authRetryMs`: the wait before dialing a broker that refused this key (revoked, other key); default 300,000 */
  reconnect?: { initialMs?: number; maxMs?: number; factor?: number; authRetryMs?: number };
  /** requeue delay after a handler threw or rejected: initial × factor^nbRequeues, at most max */
  handlerRetry?: { initialSeconds?: number; maxSeconds?: number; factor?: number };
  /** `cert` and `key`: a client certificate, for a broker with `socketServer.tls.requestCert` */
  tls?: { ca?: string | Buffer; cert?: string | Buffer; key?: string | Buffer; rejectUnauthorized?: boolean };
  /** ms a broker may stay silent (no frame, no pong) before its connection is closed; default 5,000 */
  heartbeatTimeout?: number;
}

export interface Channel {
  readonly endpoint: string;
  readonly version: string;
  /** the id as the user means it, or `*` */
  readonly id: string;
}

export interface SendInfo {
  messageId: string;
  channel: Channel;
  /** serviceIds of the slaves that stored the message, when the master did not answer */
  storedBy?: string[];
}

export interface SendOptions {
  /** stops waiting for the master: the send fails with E_ABORTED (the message may still be stored) */
  signal?: AbortSignal;
}

/**
 * What `send` and `publish` take: any JSON value but `null`/`undefined`, which always fail with
 * E_NO_VALUE; the type says so at compile time (`send(ch, null)` does not compile).
 */
export type Sendable<T> = T extends null | undefined ? 'E_NO_VALUE: send() data cannot be null or undefined' : T;

/** the names of the client's events (ClientEvents): a misspelt one reads as not one of these */
export type ClientEventName = keyof ClientEvents;

export type SendCallback = (err: WhiskerError | null, result: null, info: SendInfo) => void;

export interface DeliveryInfo {
  messageId: string;
  /** the channel the message was sent to: `id` is `*` for a message sent to `*` */
  channel: Channel;
  /**
   * the id of the subscription this copy reached, as the user means it (`*` for a subscription
   * to every id): a message sent to `*` comes once per subscribed id, each with its own
   */
  subscribedId: string;
  /** ms since the epoch, when the sender made the message */
  created: number;
  /** earlier deliveries of this message: 0 on the first */
  nbRequeues: number;
  /** the sender's client name */
  from: string;
  /**
   * NSQ's TOUCH: "still working on it". The broker gives this delivery `requeueInterval` again
   * from now, up to the channel's `maxTouchSeconds` after it was delivered. False when the
   * delivery is settled, is a replay, or no connected broker understands touches.
   */
  touch(): boolean;
}

/** `done()` acks; `done(false)` requeues now; `done(false, n)` requeues in n seconds */
export type Done = (ack?: boolean, delaySeconds?: number) => void;

/** handler arguments: a refusal (`err` set, no message) or a message */
export type ConsumeArgs<T> = [err: WhiskerError, msg: undefined, done: Done, info: undefined] | [err: null, msg: T, done: Done, info: DeliveryInfo];
export type ListenArgs<T> = [err: WhiskerError, msg: undefined, info: undefined] | [err: null, msg: T, info: DeliveryInfo];

/** A handler may return a promise: it is acked when it resolves, requeued with a delay when it rejects. */
export type ConsumeHandler<T = unknown> = (...args: ConsumeArgs<T>) => unknown;
export type ListenHandler<T = unknown> = (...args: ListenArgs<T>) => unknown;
/** the same handlers with fewer parameters (TypeScript cannot infer those from the 4-tuple) */
export type ConsumeHandler3<T = unknown> = (...args: [err: WhiskerError, msg: undefined, done: Done] | [err: null, msg: T, done: Done]) => unknown;
export type Handler2<T = unknown> = (...args: [err: WhiskerError, msg: undefined] | [err: null, msg: T]) => unknown;
export type Handler1 = (err: WhiskerError | null) => unknown;

export interface ListenOptions {
  /** aborting it closes the subscription, as `handle.close()` */
  signal?: AbortSignal;
  /** a retained channel: replay its history since then (a Date, ms, or after a message id), then go on live */
  since?: Date | number | string;
  /** at most this many deliveries unacked at once from the start, 0: paused; `handle.setLimit()` changes it (docs/client.md#flow) */
  limit?: number;
}

export interface ConsumeOptions extends ListenOptions {
  /** most unacked messages this handler holds at once; default: the channel's prefetch (1) */
  prefetch?: number;
}

/** One message of `for await (const msg of mq.consume(...))`. */
export interface StreamMessage<T = unknown> {
  readonly data: T;
  readonly info: DeliveryInfo;
  /** acks; a message not settled when the loop takes the next one is acked then */
  ack(): void;
  /** requeues, at once or in `delaySeconds` */
  nack(delaySeconds?: number): void;
}

/** The events of a client; `on('reconect', ...)` does not compile. */
export interface ClientEvents {
  /** the first broker is connected (once) */
  connect: [];
  /** a broker is connected again; its serviceId */
  reconnect: [serviceId?: string];
  /** no broker is connected any more, or disconnect() closed everything */
  disconnect: [];
  /** a refusal, a lost broker, a connect timeout, a handler that threw (E_HANDLER) */
  error: [error: WhiskerError];
  /** the master changed; null when none is connected. In a cluster, `set` names the mirror set (SPEC §13), else null */
  master: [serviceId: string | null, set: string | null];
  /** a frame from a broker acting as master with an older election epoch was ignored (docs/protocol.md#epochs) */
  stale: [serviceId: string, frameType: string];
}
