import { canonicalIds, type ChannelSet, unescapeId } from '../protocol/channel.js';
import { errorFromPayload, WhiskerError } from '../protocol/errors.js';
import type { ClientFrame, ReplyFrame, SubscriptionMode } from '../protocol/frames.js';
import { reportedPromise } from './observed.js';
import type { ChannelId, DeliveryInfo } from './types.js';

export type IdsCallback = (err: WhiskerError | null) => void;

/** settles one delivery on every broker: ack, or requeue in `delaySeconds` */
export type Settle = (ok: boolean, delaySeconds: number) => void;

/** Where a subscription's messages and refusals go: a handler (dispatch.ts) or a stream (stream.ts). */
export interface SubscriptionSink {
  message(data: unknown, info: DeliveryInfo, settle: Settle): void;
  /** a refusal or revocation; `empty`: the subscription has no id left */
  refusal(error: WhiskerError, empty: boolean): void;
  /** the subscription was closed (close(), an abort, disconnect()) */
  closed?(): void;
}

/** What a subscription needs of its client. */
export interface SubscriptionHost {
  /** sends to every connected broker; `onMasterReply` gets the master's answer, or null if none */
  request(subscription: ClientSubscription, build: (req: number) => ClientFrame, onMasterReply: (reply: ReplyFrame | null) => void): void;
  forget(subscription: ClientSubscription): void;
  /** the failure of a promise nobody awaited (addId, removeId, close without a callback) */
  report(error: WhiskerError): void;
  /** a subscription's flow limit to every connected broker; false when one of them ignores it (older) */
  flow(sub: number, limit: number | null): boolean;
}

/** a flow limit as the API takes it: null (none) or an integer from 0 (docs/client.md#flow) */
export function checkLimit(limit: unknown): number | null {
  if (limit === null) return null;
  if (!Number.isSafeInteger(limit) || (limit as number) < 0) throw new WhiskerError('E_BAD_ARGUMENT', 'limit must be null or an integer from 0');
  return limit as number;
}

/**
 * One listen/consume subscription, kept by the client so it can be registered again on every
 * broker and after every reconnection (SPEC §3). A `broken` one (a bad channel) never reaches
 * a broker: every call on it fails with its error.
 */
export class ClientSubscription {
  readonly sub: number;
  readonly mode: SubscriptionMode;
  readonly endpoint: string;
  readonly version: string;
  /** `endpoint/version`: where a cluster routes it */
  readonly queue: string;
  readonly prefetch: number | undefined;
  readonly sink: SubscriptionSink;
  /** the flow limit the user set (null: none) and whether it is paused (docs/client.md#flow) */
  #limit: number | null;
  #paused = false;
  /** canonical ids, as the brokers know them */
  readonly wireIds = new Set<string>();
  /** the handle's live `ids` array (ids as the user means them) */
  readonly ids: string[] = [];
  readonly ready: Promise<void>;
  #settleReady!: (error: WhiskerError | null) => void;
  #isReady = false;
  #closed = false;
  readonly #broken: WhiskerError | null;
  /** addId/removeId callbacks waiting for a master to confirm */
  #waiting: IdsCallback[] = [];
  readonly #host: SubscriptionHost;

  get host(): SubscriptionHost {
    return this.#host;
  }

  constructor(host: SubscriptionHost, sub: number, mode: SubscriptionMode, set: ChannelSet, prefetch: number | undefined, sink: SubscriptionSink, broken: WhiskerError | null = null, limit: number | null = null) {
    this.#host = host;
    this.#limit = limit;
    this.sub = sub;
    this.mode = mode;
    this.endpoint = set.endpoint;
    this.version = set.version;
    this.queue = `${set.endpoint}/${set.version}`;
    this.prefetch = prefetch;
    this.sink = sink;
    this.#broken = broken;
    this.ready = new Promise((resolve, reject) => (this.#settleReady = (error) => (error ? reject(error) : resolve())));
    // the refusal also reaches the handler: a caller that never looks at `ready` must not crash
    this.ready.catch(() => {});
    this.#addLocal(set.ids);
    if (broken) {
      this.#closed = true;
      setImmediate(() => this.#refuse(broken, true));
    }
  }

  get closed(): boolean {
    return this.#closed;
  }

  subscribeFrame(req: number): ClientFrame {
    return {
      type: 'subscribe',
      req,
      sub: this.sub,
      mode: this.mode,
      endpoint: this.endpoint,
      version: this.version,
      ids: [...this.wireIds],
      ...(this.prefetch !== undefined ? { prefetch: this.prefetch } : {}),
      // with the subscription itself: after a reconnection it is held from its first delivery
      ...(this.#wireLimit !== null ? { limit: this.#wireLimit } : {}),
    };
  }

  /** what the brokers are told: 0 while paused, else the limit set */
  get #wireLimit(): number | null {
    return this.#paused ? 0 : this.#limit;
  }

  /** `limit` null lifts it; `paused` true holds the subscription at 0 until resumed */
  flow(change: { limit?: number | null; paused?: boolean }): boolean {
    if (this.#broken || this.#closed) return false;
    if (change.limit !== undefined) this.#limit = change.limit;
    if (change.paused !== undefined) this.#paused = change.paused;
    return this.#host.flow(this.sub, this.#wireLimit);
  }

  /** the master answered a subscribe (first time or after a reconnection) */
  onMasterReply(reply: ReplyFrame | null): void {
    if (!reply) return; // the master went away first: it gets the subscription again on reconnect
    const hadIds = this.wireIds.size > 0;
    const error = this.#applyReply(reply);
    // wholly refused: `ready` rejects with the code (a subscription with no id asked for is fine)
    this.#readyWith(error && (reply.error || (hadIds && this.wireIds.size === 0)) ? error : null);
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const cb of waiting) cb(error);
  }

  addId(ids: unknown, cb: IdsCallback): void {
    if (this.#broken) return cb(this.#broken);
    let added: string[];
    try {
      added = this.#addLocal(canonicalIds(Array.isArray(ids) ? ids : [ids], true));
    } catch (error) {
      cb(error as WhiskerError);
      return;
    }
    if (added.length === 0 || this.#closed) return cb(null);
    // without a master yet, the callback waits for the master's answer to the whole subscription,
    // unless a broker answers E_NO_PLACEMENT first (then that is the answer)
    let called = false;
    const once: IdsCallback = (error) => {
      if (called) return;
      called = true;
      cb(error);
    };
    this.#host.request(
      this,
      (req) => ({ type: 'addIds', req, sub: this.sub, ids: added }),
      (reply) => {
        if (!reply) return void this.#waiting.push(once);
        this.#waiting = this.#waiting.filter((waiting) => waiting !== once);
        once(this.#applyReply(reply));
      },
    );
  }

  removeId(ids: unknown, cb: IdsCallback): void {
    if (this.#broken) return cb(this.#broken);
    let removed: string[];
    try {
      removed = canonicalIds(Array.isArray(ids) ? ids : [ids]).filter((id) => this.wireIds.has(id));
    } catch (error) {
      cb(error as WhiskerError);
      return;
    }
    this.#removeLocal(removed);
    if (removed.length === 0 || this.#closed) return cb(null);
    this.#host.request(
      this,
      (req) => ({ type: 'removeIds', req, sub: this.sub, ids: removed }),
      (reply) => cb(reply?.error ? errorFromPayload(reply.error) : null),
    );
  }

  close(cb: IdsCallback): void {
    if (this.#closed) return cb(null);
    this.#closed = true;
    this.#readyWith(new WhiskerError('E_ABORTED', 'Subscription closed before the master registered it'));
    this.#host.forget(this);
    this.sink.closed?.();
    this.#host.request(this, (req) => ({ type: 'unsubscribe', req, sub: this.sub }), () => cb(null));
  }

  /** the broker removed ids on its own (a reload took the right away, docs/protocol.md#revoked) */
  revoked(ids: readonly string[], error: WhiskerError): void {
    const gone = ids.filter((id) => this.wireIds.has(id));
    // each mirror sends its own `revoked` for a reload of them all: the handler is told once
    if (gone.length === 0 && ids.length > 0) return;
    this.#removeLocal(gone);
    this.#refuse(error, this.wireIds.size === 0);
  }

  /**
   * Every broker refused this client's key (SPEC §4: none is dialed again before authRetryMs): a
   * subscription no master registered yet is refused with that E_AUTH, as a send is. It is kept:
   * it is registered when a broker takes the key (after authRetryMs or a new connect()).
   */
  keyRefused(error: WhiskerError): void {
    if (this.#isReady || this.#closed || this.#broken) return;
    this.#readyWith(error);
    this.sink.refusal(error, true);
  }

  #readyWith(error: WhiskerError | null): void {
    if (this.#isReady) return;
    this.#isReady = true;
    this.#settleReady(error);
  }

  #refuse(error: WhiskerError, empty: boolean): void {
    if (this.#broken) this.#readyWith(error);
    this.sink.refusal(error, empty);
  }

  #applyReply(reply: ReplyFrame): WhiskerError | null {
    if (reply.error) {
      const error = errorFromPayload(reply.error);
      this.#refuse(error, this.wireIds.size === 0);
      return error;
    }
    let first: WhiskerError | null = null;
    for (const refused of reply.refused ?? []) {
      const error = errorFromPayload(refused.error);
      first ??= error;
      this.#removeLocal([refused.id].filter((id) => this.wireIds.has(id)));
      this.#refuse(error, this.wireIds.size === 0);
    }
    return first;
  }

  #addLocal(ids: readonly string[]): string[] {
    const added = ids.filter((id) => !this.wireIds.has(id));
    for (const id of added) {
      this.wireIds.add(id);
      this.ids.push(unescapeId(id));
    }
    return added;
  }

  #removeLocal(ids: readonly string[]): void {
    for (const id of ids) {
      if (!this.wireIds.delete(id)) continue;
      const index = this.ids.indexOf(unescapeId(id));
      if (index >= 0) this.ids.splice(index, 1);
    }
  }
}

/** What `listen` and `consume` return (SPEC §3). */
export class Handle {
  readonly #subscription: ClientSubscription;

  constructor(subscription: ClientSubscription) {
    this.#subscription = subscription;
  }

  /** the live list of ids, as the user means them */
  get ids(): string[] {
    return this.#subscription.ids;
  }

  /** compat: the reference exposed the ids here */
  get _handler(): { ids: string[] } {
    return { ids: this.#subscription.ids };
  }

  /** resolves once the master has registered the subscription; rejects with the code if it refused all of it */
  get ready(): Promise<void> {
    return this.#subscription.ready;
  }

  addId(ids: ChannelId | readonly ChannelId[]): Promise<void>;
  addId(ids: ChannelId | readonly ChannelId[], cb: IdsCallback): void;
  addId(ids: ChannelId | readonly ChannelId[], cb?: IdsCallback): Promise<void> | void {
    return withCallback((done) => this.#subscription.addId(ids, done), cb, this.#subscription.host.report);
  }

  removeId(ids: ChannelId | readonly ChannelId[]): Promise<void>;
  removeId(ids: ChannelId | readonly ChannelId[], cb: IdsCallback): void;
  removeId(ids: ChannelId | readonly ChannelId[], cb?: IdsCallback): Promise<void> | void {
    return withCallback((done) => this.#subscription.removeId(ids, done), cb, this.#subscription.host.report);
  }

  close(): Promise<void>;
  close(cb: IdsCallback): void;
  close(cb?: IdsCallback): Promise<void> | void {
    return withCallback((done) => this.#subscription.close(done), cb, this.#subscription.host.report);
  }

  /**
   * At most `limit` deliveries of this handler unacked at once (listeners too), beneath
   * `prefetch`; null lifts it (docs/client.md#flow). Messages already held stay held. Sent at
   * once, ahead of the acks of this turn: `done(); handle.setLimit(0)` takes nothing more.
   * False when a connected broker is older and ignores it.
   */
  setLimit(limit: number | null): boolean {
    return this.#subscription.flow({ limit: checkLimit(limit) });
  }

  /** no new deliveries until `resume()`; what the handler holds stays its own to ack (NSQ's RDY 0) */
  pause(): boolean {
    return this.#subscription.flow({ paused: true });
  }

  /** deliveries again, up to the limit set (if any) */
  resume(): boolean {
    return this.#subscription.flow({ paused: false });
  }
}

/**
 * Node-style callback when given, a promise otherwise; the callback fires exactly once. The
 * promise's failure, when nobody awaits it, goes to `report` (observed.ts).
 */
export function withCallback(work: (done: IdsCallback) => void, cb: IdsCallback | undefined, report: (error: WhiskerError) => void): Promise<void> | void {
  if (cb) {
    let called = false;
    work((err) => {
      if (called) return;
      called = true;
      cb(err);
    });
    return;
  }
  return reportedPromise<void>((resolve, reject) => {
    let called = false;
    work((err) => {
      if (called) return;
      called = true;
      if (err) reject(err);
      else resolve();
    });
  }, report);
}
