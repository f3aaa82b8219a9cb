import { canonicalIds, type ChannelSet, unescapeId } from '../protocol/channel.js';
import { errorFromPayload, type WhiskerError } from '../protocol/errors.js';
import type { ClientFrame, ReplyFrame, SubscriptionMode } from '../protocol/frames.js';

export interface DeliveryInfo {
  messageId: string;
  channel: { endpoint: string; version: string; id: string };
  created: number;
  nbRequeues: number;
  from: string;
}

export type Done = (ack?: boolean, delaySeconds?: number) => void;
export type ListenHandler = (err: WhiskerError | null, msg?: unknown, info?: DeliveryInfo) => void;
export type ConsumeHandler = (err: WhiskerError | null, msg?: unknown, done?: Done, info?: DeliveryInfo) => unknown;
export type IdsCallback = (err: WhiskerError | null) => void;

/** What a handle needs of its client. */
export interface SubscriptionHost {
  /** sends to every connected broker; `onMasterReply` gets the master's answer, or null if none */
  request(build: (req: number) => ClientFrame, onMasterReply: (reply: ReplyFrame | null) => void): void;
  forget(subscription: ClientSubscription): void;
}

/**
 * One listen/consume handler, kept by the client so it can be registered again on every
 * broker and after every reconnection (SPEC §3).
 */
export class ClientSubscription {
  readonly sub: number;
  readonly mode: SubscriptionMode;
  readonly endpoint: string;
  readonly version: string;
  readonly prefetch: number | undefined;
  readonly handler: ListenHandler | ConsumeHandler;
  /** canonical ids, as the brokers know them */
  readonly wireIds = new Set<string>();
  /** the handle's live `ids` array (ids as the user means them) */
  readonly ids: string[] = [];
  readonly ready: Promise<void>;
  #resolveReady!: () => void;
  #isReady = false;
  #closed = false;
  /** addId/removeId callbacks waiting for a master to confirm */
  #waiting: IdsCallback[] = [];
  readonly #host: SubscriptionHost;

  constructor(host: SubscriptionHost, sub: number, mode: SubscriptionMode, set: ChannelSet, prefetch: number | undefined, handler: ListenHandler | ConsumeHandler) {
    this.#host = host;
    this.sub = sub;
    this.mode = mode;
    this.endpoint = set.endpoint;
    this.version = set.version;
    this.prefetch = prefetch;
    this.handler = handler;
    this.ready = new Promise((resolve) => (this.#resolveReady = resolve));
    this.#addLocal(set.ids);
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
    };
  }

  /** the master answered a subscribe (first time or after a reconnection) */
  onMasterReply(reply: ReplyFrame | null): void {
    if (!reply) return; // the master went away first: it gets the subscription again on reconnect
    const error = this.#applyReply(reply);
    if (!this.#isReady) {
      this.#isReady = true;
      this.#resolveReady();
    }
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const cb of waiting) cb(error);
  }

  addId(ids: unknown, cb: IdsCallback): void {
    let added: string[];
    try {
      added = this.#addLocal(canonicalIds(Array.isArray(ids) ? ids : [ids]));
    } catch (error) {
      cb(error as WhiskerError);
      return;
    }
    if (added.length === 0) return cb(null);
    // without a master yet, the callback waits for the master's answer to the whole subscription
    this.#host.request(
      (req) => ({ type: 'addIds', req, sub: this.sub, ids: added }),
      (reply) => (reply ? cb(this.#applyReply(reply)) : this.#waiting.push(cb)),
    );
  }

  removeId(ids: unknown, cb: IdsCallback): void {
    let removed: string[];
    try {
      removed = canonicalIds(Array.isArray(ids) ? ids : [ids]).filter((id) => this.wireIds.has(id));
    } catch (error) {
      cb(error as WhiskerError);
      return;
    }
    this.#removeLocal(removed);
    if (removed.length === 0) return cb(null);
    this.#host.request(
      (req) => ({ type: 'removeIds', req, sub: this.sub, ids: removed }),
      (reply) => cb(reply?.error ? errorFromPayload(reply.error) : null),
    );
  }

  close(cb: IdsCallback): void {
    if (this.#closed) return cb(null);
    this.#closed = true;
    this.#host.forget(this);
    this.#host.request((req) => ({ type: 'unsubscribe', req, sub: this.sub }), () => cb(null));
  }

  /** a refusal from the broker reaches the handler as `err` (compat) */
  refuse(error: WhiskerError): void {
    if (this.mode === 'listen') (this.handler as ListenHandler)(error);
    else void (this.handler as ConsumeHandler)(error, undefined, () => {}, undefined);
  }

  removeRefused(ids: readonly string[]): void {
    this.#removeLocal(ids.filter((id) => this.wireIds.has(id)));
  }

  #applyReply(reply: ReplyFrame): WhiskerError | null {
    if (reply.error) {
      const error = errorFromPayload(reply.error);
      this.refuse(error);
      return error;
    }
    let first: WhiskerError | null = null;
    for (const refused of reply.refused ?? []) {
      const error = errorFromPayload(refused.error);
      first ??= error;
      this.removeRefused([refused.id]);
      this.refuse(error);
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

  get ids(): string[] {
    return this.#subscription.ids;
  }

  /** compat: the reference exposed the ids here */
  get _handler(): { ids: string[] } {
    return { ids: this.#subscription.ids };
  }

  /** resolves once the master has registered the subscription */
  get ready(): Promise<void> {
    return this.#subscription.ready;
  }

  addId(ids: unknown, cb?: IdsCallback): Promise<void> | undefined {
    return withCallback((done) => this.#subscription.addId(ids, done), cb);
  }

  removeId(ids: unknown, cb?: IdsCallback): Promise<void> | undefined {
    return withCallback((done) => this.#subscription.removeId(ids, done), cb);
  }

  close(cb?: IdsCallback): Promise<void> | undefined {
    return withCallback((done) => this.#subscription.close(done), cb);
  }
}

/** Node-style callback when given, a promise otherwise; the callback fires exactly once. */
export function withCallback(work: (done: IdsCallback) => void, cb?: IdsCallback): Promise<void> | undefined {
  if (cb) {
    let called = false;
    work((err) => {
      if (called) return;
      called = true;
      cb(err);
    });
    return undefined;
  }
  return new Promise((resolve, reject) => {
    let called = false;
    work((err) => {
      if (called) return;
      called = true;
      if (err) reject(err);
      else resolve();
    });
  });
}
