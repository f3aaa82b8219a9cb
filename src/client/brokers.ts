import { errorFromPayload, WhiskerError } from '../protocol/errors.js';
import type { BrokerFrame, ClientFrame, Delivery, PublishResult, RefusedId, ReplayEndFrame, ReplyFrame } from '../protocol/frames.js';
import { Connection, type ConnectionOwner, finalAuthReason } from '../link/connection.js';
import type { ClientKeys } from '../link/keys.js';
import type { ClusterFrame } from '../protocol/cluster.js';
import type { HostTarget } from '../link/hosts.js';
import type { ClientOptions } from './options.js';
import type { Outbox, PendingSend } from './outbox.js';
import type { ClientSubscription } from './subscription.js';

/** What the broker set needs of its client. */
export interface BrokersOwner {
  subscriptions(): Iterable<ClientSubscription>;
  readonly outbox: Outbox;
  onDelivery(delivery: Delivery): void;
  onRevoked(sub: number, ids: readonly string[], error: WhiskerError): void;
  onReplayEnd(frame: ReplayEndFrame): void;
  /** the broker serving these replays is gone: they end with `error` */
  onReplaysLost(subs: readonly number[], error: WhiskerError): void;
  emit(event: 'connect' | 'reconnect' | 'disconnect' | 'master' | 'stale', ...args: unknown[]): void;
  onError(error: WhiskerError): void;
  /** cluster (SPEC §13): does this set serve `queue`? Subscriptions and sends of others are not theirs */
  serves?(queue: string): boolean;
  /** cluster: a broker answered E_MOVED for a send or a subscription: the owner re-routes it */
  onMoved?(error: WhiskerError, moved: { pending: PendingSend } | { subscription: ClientSubscription }): void;
  /** cluster: a broker pushed (part of) the cluster map */
  onCluster?(frame: ClusterFrame): void;
}

const servesAll = (): boolean => true;

/**
 * Why this file is long: one mirror set's connections as one: connect's outcome, broadcast of
 * sends, subscriptions and acks, the master and its epoch, key refusals, replays; the cluster's
 * sets are in sets.ts.
 *
 * Every broker of `hosts` at once (SPEC §3, §9): one Connection each, dialled in parallel;
 * sends, subscriptions and acks go to all of them; the master's answers are the ones that count.
 */
export class Brokers {
  readonly #connections: Connection[];
  readonly #connectionOwner: ConnectionOwner;
  readonly #owner: BrokersOwner;
  readonly #serves: (queue: string) => boolean;
  readonly #connectTimeoutMs: number;
  readonly #authRetryMs: number;
  /** brokers that refused the key itself, until they are dialed again */
  readonly #refusals = new Map<Connection, WhiskerError>();
  /** connections to brokers the cluster map named (addHosts), not given in `hosts` */
  readonly #fromMap = new WeakSet<Connection>();
  #master: Connection | null = null;
  /** the newest election epoch any broker announced (docs/protocol.md#epochs) */
  #newestEpoch = 0;
  /** replays under way, by sub: the one broker each was asked of */
  readonly #replays = new Map<number, Connection>();
  /** replays asked for while no broker was connected, by sub */
  /** subscriptions already refused E_NO_PLACEMENT by a broker while the set had no master */
  readonly #toldNoPlacement = new WeakSet<ClientSubscription>();
  /**
   * what each slave answered a subscription (its subscribe, then its addIds): the ids it refused,
   * or 'pending' while its answer to the subscribe is on its way. A slave promoted to master holds
   * only what it accepted, so its promotion answers the subscription with these refusals
   * (a reserved id, SPEC §5), not with a blanket "registered" (issue 28, attacks-28 a9)
   */
  readonly #slaveAnswers = new WeakMap<ClientSubscription, Map<Connection, Map<string, RefusedId> | 'pending'>>();
  readonly #waitingReplays = new Map<number, { build: (req: number) => ClientFrame; onReply: (reply: ReplyFrame | null) => void; timer: NodeJS.Timeout }>();
  readonly #sendTimeoutMs: number;
  #wasConnected = false;
  /** connect() has not reported yet: a budget refusal is retried, not reported (SPEC §4) */
  #starting = false;
  #everConnected = false;
  #maxMessageBytes = 1_048_576 - 512;
  #onAnswer: (connection: Connection, error: WhiskerError | null) => void = () => {};
  #abortStart: () => void = () => {};

  constructor(options: ClientOptions, keys: ClientKeys, owner: BrokersOwner, hosts: readonly HostTarget[] = options.hosts) {
    this.#owner = owner;
    this.#serves = owner.serves ? (queue) => owner.serves!(queue) : servesAll;
    this.#connectTimeoutMs = options.connectTimeoutMs;
    this.#authRetryMs = options.reconnect.authRetryMs;
    this.#sendTimeoutMs = options.sendTimeoutMs;
    const connectionOwner: ConnectionOwner = {
      clientId: options.clientId,
      keys,
      tls: options.tls,
      ...(options.heartbeatTimeoutMs !== undefined ? { heartbeatTimeoutMs: options.heartbeatTimeoutMs } : {}),
      reconnect: options.reconnect,
      onReady: (connection) => this.#connectionReady(connection),
      onDown: (connection, error) => this.#connectionDown(connection, error),
      onFrame: (connection, frame) => this.#onFrame(connection, frame),
    };
    this.#connectionOwner = connectionOwner;
    this.#connections = hosts.map((target) => new Connection(target, connectionOwner));
  }

  /** cluster: brokers of this set the map lists and this set does not dial yet (SPEC §13) */
  addHosts(targets: readonly HostTarget[]): void {
    for (const target of targets) {
      if (this.#connections.some((c) => c.target.url === target.url)) continue;
      const connection = new Connection(target, this.#connectionOwner);
      this.#connections.push(connection);
      this.#fromMap.add(connection);
      connection.start();
    }
  }

  /**
   * A broker dialed twice, once as given in `hosts` and once under the host string it advertises
   * in the map (`localhost:4001` and `127.0.0.1:4001`): the map's connection goes, so that each
   * subscription lives once on each broker. True when `connection` was the one closed.
   */
  #closedTwin(connection: Connection): boolean {
    const twin = this.#connections.find((c) => c !== connection && c.isReady && c.serviceId === connection.serviceId);
    if (!twin) return false;
    const extra = this.#fromMap.has(connection) ? connection : this.#fromMap.has(twin) ? twin : null;
    if (!extra) return false;
    this.#connections.splice(this.#connections.indexOf(extra), 1);
    void extra.close();
    return extra === connection;
  }

  /** a subscribe's answer: E_MOVED goes to the owner (it re-routes), the master's other answers (and any E_NO_PLACEMENT while there is none) to the subscription */
  #subscribeReply(connection: Connection, subscription: ClientSubscription): (reply: ReplyFrame | null) => void {
    this.#answers(subscription).set(connection, 'pending');
    return (reply) => {
      if (reply?.error?.code === 'E_MOVED' && this.#owner.onMoved) return this.#owner.onMoved(errorFromPayload(reply.error), { subscription });
      if (connection.isMaster) {
        if (reply) this.#answers(subscription).set(connection, new Map()); // answered as master: nothing left to tell
        return subscription.onMasterReply(reply);
      }
      if (reply && !reply.error) this.#answers(subscription).set(connection, new Map((reply.refused ?? []).map((r) => [r.id, r])));
      else if (reply) this.#answers(subscription).delete(connection);
      // E_NO_PLACEMENT: etcd is out of reach, so no master will answer it either (SPEC §13); each
      // broker of the set says so: the subscription is told once
      if (reply?.error?.code !== 'E_NO_PLACEMENT' || this.#master || this.#toldNoPlacement.has(subscription)) return;
      this.#toldNoPlacement.add(subscription);
      subscription.onMasterReply(reply);
    };
  }

  get maxMessageBytes(): number {
    return this.#maxMessageBytes;
  }

  isConnected(): boolean {
    return this.#connections.some((c) => c.isReady);
  }

  /** `cb` fires once: when every host has answered, or at connectTimeout (SPEC §3) */
  start(cb: (err: WhiskerError | null) => void): void {
    const answered = new Map<Connection, WhiskerError | null>();
    let called = false;
    let timedOut = false;
    const settle = () => {
      if (called) return;
      const connected = this.isConnected();
      const allAnswered = answered.size === this.#connections.length;
      if (!allAnswered && !timedOut) return;
      if (!connected && !timedOut && [...answered.values()].some((e) => e === null || isNetworkError(e) || isBudgetRefusal(e))) return;
      called = true;
      this.#starting = false;
      clearTimeout(timer);
      if (connected) return cb(null);
      const refusal = [...answered.values()].find((e) => e && !isNetworkError(e));
      cb(refusal ?? new WhiskerError('E_TIMEOUT', `No broker reachable within ${this.#connectTimeoutMs} ms; still trying`));
    };
    const timer = setTimeout(() => {
      timedOut = true;
      settle();
    }, this.#connectTimeoutMs);
    this.#starting = true;
    this.#abortStart = () => {
      if (called) return;
      called = true;
      this.#starting = false;
      clearTimeout(timer);
      cb(new WhiskerError('E_DISCONNECTED', 'disconnect() was called before a broker was connected'));
    };
    this.#onAnswer = (connection, error) => {
      if (!answered.has(connection) || answered.get(connection) !== null) answered.set(connection, error);
      settle();
    };
    for (const connection of this.#connections) connection.start();
  }

  async close(): Promise<void> {
    this.#abortStart();
    await Promise.all(this.#connections.map((c) => c.close()));
  }

  request(build: (req: number) => ClientFrame, onMasterReply: (reply: ReplyFrame | null) => void, subscription?: ClientSubscription): void {
    const master = this.#master;
    // without a master, a broker's E_NO_PLACEMENT (etcd out of reach, SPEC §13) is the answer: once
    let toldNoPlacement = false;
    const noPlacement = (reply: ReplyFrame | null) => {
      if (toldNoPlacement || this.#master || reply?.error?.code !== 'E_NO_PLACEMENT') return;
      toldNoPlacement = true;
      onMasterReply(reply);
    };
    for (const connection of this.#connections) {
      if (!connection.isReady) continue;
      if (connection === master) {
        connection.request(build, onMasterReply);
        continue;
      }
      // a slave's answer to an addIds is kept for its promotion (#slaveAnswers)
      let asked: readonly string[] = [];
      const recorded = (frame: ClientFrame): ClientFrame => ((asked = frame.type === 'addIds' ? frame.ids : []), frame);
      connection.request(subscription ? (req) => recorded(build(req)) : build, (reply) => {
        const answers = subscription && this.#slaveAnswers.get(subscription)?.get(connection);
        if (answers instanceof Map && reply && !reply.error) {
          for (const id of asked) answers.delete(id);
          for (const refused of reply.refused ?? []) answers.set(refused.id, refused);
        }
        if (!master) noPlacement(reply);
      });
    }
    if (!master) onMasterReply(null);
  }

  #answers(subscription: ClientSubscription): Map<Connection, Map<string, RefusedId> | 'pending'> {
    let answers = this.#slaveAnswers.get(subscription);
    if (!answers) this.#slaveAnswers.set(subscription, (answers = new Map()));
    return answers;
  }

  /** a replay goes to one broker: the master, else any connected one (every mirror holds the history) */
  replay(sub: number, build: (req: number) => ClientFrame, onReply: (reply: ReplyFrame | null) => void): void {
    const connection = this.#master ?? this.#connections.find((c) => c.isReady);
    // every broker refused this key and none is dialed before authRetryMs: it ends with that E_AUTH now
    const refused = connection ? null : this.keyRefusal();
    if (refused) return onReply({ type: 'reply', req: 0, error: refused.toJSON() });
    if (!connection) {
      // made before a broker is up (SPEC §3: such calls wait): sent when one is, E_NO_MASTER at sendTimeout
      const timer = setTimeout(() => (this.#waitingReplays.delete(sub), onReply(null)), this.#sendTimeoutMs);
      timer.unref();
      this.#waitingReplays.set(sub, { build, onReply, timer });
      return;
    }
    this.#replays.set(sub, connection);
    connection.request(build, (reply) => {
      // refused (E_MOVED among others): no replayEnd follows from this broker
      if (reply?.error && this.#replays.get(sub) === connection) this.#replays.delete(sub);
      onReply(reply);
    });
  }

  /** stops a replay on its broker (an `unsubscribe` of its sub); its `replayEnd` follows with the count so far */
  cancelReplay(sub: number): void {
    const waiting = this.#waitingReplays.get(sub);
    if (waiting) {
      clearTimeout(waiting.timer);
      this.#waitingReplays.delete(sub);
      return waiting.onReply(null);
    }
    const connection = this.#replays.get(sub);
    if (connection?.isReady) connection.request((req) => ({ type: 'unsubscribe', req, sub }), () => {});
  }

  subscribe(subscription: ClientSubscription): void {
    const refused = this.keyRefusal();
    if (refused) subscription.keyRefused(refused);
    for (const connection of this.#connections) {
      if (!connection.isReady) continue;
      connection.request((req) => subscription.subscribeFrame(req), this.#subscribeReply(connection, subscription));
    }
  }

  /**
   * A subscription coming (back) to this set from another (a move, SPEC §13): one left here by an
   * earlier move of its queue is unsubscribed first, then it is registered with its ids of now.
   * Subscribing again over it was refused `E_PROTOCOL` ("already exists"), which reached the handler.
   */
  resubscribe(subscription: ClientSubscription): void {
    for (const connection of this.#connections) {
      if (!connection.isReady) continue;
      connection.request((req) => ({ type: 'unsubscribe', req, sub: subscription.sub }), () => {});
      connection.request((req) => subscription.subscribeFrame(req), this.#subscribeReply(connection, subscription));
    }
  }

  publish(pending: PendingSend): void {
    for (const connection of this.#connections) if (connection.isReady) connection.queuePublish(pending.message, pending.bytes);
  }

  /** acks go to every broker so slaves drop their copy (docs/protocol.md#ack) */
  settle(delivery: Delivery, ok: boolean, delaySeconds: number): void {
    const frame = { sub: delivery.sub, messageId: delivery.messageId, via: delivery.via, ok, ...(delaySeconds > 0 ? { delaySeconds } : {}) };
    for (const connection of this.#connections) if (connection.isReady) connection.queueAck(frame);
  }

  /**
   * extends a delivery's ack deadline on every broker that understands `touch` (docs/protocol.md#touch);
   * false when none does
   */
  touch(delivery: Delivery): boolean {
    let sent = false;
    for (const connection of this.#connections) {
      if (!connection.isReady || !connection.supports('touch')) continue;
      connection.send({ type: 'touch', touches: [{ sub: delivery.sub, messageId: delivery.messageId, via: delivery.via }] });
      sent = true;
    }
    return sent;
  }

  /**
   * a subscription's flow limit to every connected broker (docs/protocol.md#flow), written ahead
   * of the acks collected this turn; false when one of them is older and would not understand it
   */
  flow(sub: number, limit: number | null): boolean {
    let understood = true;
    for (const connection of this.#connections) {
      if (!connection.isReady) continue;
      if (connection.supports('flow')) connection.sendAhead({ type: 'flow', sub, limit });
      else understood = false;
    }
    return understood;
  }

  #connectionReady(connection: Connection): void {
    if (this.#closedTwin(connection)) return;
    this.#refusals.delete(connection);
    // a broker announces its frame limit in `welcome`: the smallest one bounds every send
    this.#maxMessageBytes = Math.min(...this.#connections.map((c) => c.maxPayloadBytes), 1_048_576) - 512;
    const serves = this.#serves;
    for (const subscription of this.#owner.subscriptions()) {
      if (!serves(subscription.queue)) continue;
      connection.request((req) => subscription.subscribeFrame(req), this.#subscribeReply(connection, subscription));
    }
    for (const pending of this.#owner.outbox.values()) {
      if (!pending.answeredBy.has(connection) && serves(pending.queue)) connection.queuePublish(pending.message, pending.bytes);
    }
    this.#updateMaster();
    for (const [sub, { build, onReply, timer }] of [...this.#waitingReplays]) {
      clearTimeout(timer);
      this.#waitingReplays.delete(sub);
      this.replay(sub, build, onReply);
    }
    this.#onAnswer(connection, null);
    if (!this.#wasConnected) {
      this.#wasConnected = true;
      this.#owner.emit(this.#everConnected ? 'reconnect' : 'connect');
      this.#everConnected = true;
    } else {
      this.#owner.emit('reconnect', connection.serviceId);
    }
  }

  /** the refusal of the key when every broker refused it (none connected), else null */
  keyRefusal(): WhiskerError | null {
    if (this.isConnected() || this.#refusals.size < this.#connections.length) return null;
    return [...this.#refusals.values()].at(-1) ?? null;
  }

  /** connect() again: brokers held back after refusing the key are dialed now */
  retryRefused(): void {
    for (const connection of this.#connections) if (connection.retryNow()) this.#refusals.delete(connection);
  }

  #connectionDown(connection: Connection, error: WhiskerError | null): void {
    const final = finalAuthReason(error);
    if (final) error = this.#keyRefused(connection, error!, final);
    else this.#refusals.delete(connection);
    this.#onAnswer(connection, error ?? new WhiskerError('E_DISCONNECTED', `Cannot reach ${connection.target.spec}`));
    if (error && !(this.#starting && isBudgetRefusal(error))) this.#owner.onError(error);
    const lost = [...this.#replays].filter(([, c]) => c === connection).map(([sub]) => sub);
    for (const sub of lost) this.#replays.delete(sub);
    if (lost.length > 0) this.#owner.onReplaysLost(lost, new WhiskerError('E_DISCONNECTED', `Connection to ${connection.target.spec} lost during a replay`));
    this.#updateMaster();
    if (this.#wasConnected && !this.isConnected()) {
      this.#wasConnected = false;
      this.#owner.emit('disconnect');
    }
  }

  /**
   * The broker refused the key itself (SPEC §4): it is not dialed again before `authRetryMs`;
   * with no broker left, pending sends fail with this E_AUTH (no broker will take them).
   */
  #keyRefused(connection: Connection, error: WhiskerError, reason: string): WhiskerError {
    const retryMs = this.#authRetryMs;
    const advice = reason === 'revoked'
      ? 'this key was revoked: give the client a new key pair (or another name), or ask the operator'
      : 'this name is registered with another key: use that key, or have the operator run `whisker keys revoke` for the name';
    const next = `${connection.serviceId} is dialed again in ${Math.round(retryMs / 1000)} s (reconnect.authRetryMs) or at connect()`;
    const refused = new WhiskerError('E_AUTH', `${error.message} (${reason}: ${advice}; ${next})`, { reason, serviceId: connection.serviceId, retryInMs: retryMs });
    this.#refusals.set(connection, refused);
    if (!this.isConnected()) {
      // what waits for a broker fails now, as a send made from now on does (not at sendTimeout)
      this.#owner.outbox.failAll(refused);
      for (const subscription of this.#owner.subscriptions()) if (this.#serves(subscription.queue)) subscription.keyRefused(refused);
      for (const [sub, waiting] of [...this.#waitingReplays]) {
        clearTimeout(waiting.timer);
        this.#waitingReplays.delete(sub);
        waiting.onReply({ type: 'reply', req: 0, error: refused.toJSON() });
      }
    }
    return refused;
  }

  #updateMaster(): void {
    const master = this.#connections.find((c) => c.isMaster) ?? null;
    if (master === this.#master) return;
    this.#master = master;
    this.#owner.emit('master', master?.serviceId ?? null);
  }

  /**
   * A broker acting as master with an epoch older than the newest seen was fenced: what it
   * delivers or answers is ignored (docs/protocol.md#epochs). A slave that has not heard of the
   * new master yet still builds `storedBy`.
   */
  #isStale(connection: Connection, frame: BrokerFrame): boolean {
    for (const c of this.#connections) if (c.epoch !== undefined && c.epoch > this.#newestEpoch) this.#newestEpoch = c.epoch;
    if (!connection.isMaster || connection.epoch === undefined || connection.epoch >= this.#newestEpoch) return false;
    this.#owner.emit('stale', connection.serviceId, frame.type);
    return true;
  }

  #onFrame(connection: Connection, frame: BrokerFrame): void {
    if ((frame.type === 'results' || frame.type === 'deliver') && this.#isStale(connection, frame)) return;
    switch (frame.type) {
      case 'results':
        this.#onResults(connection, frame.results);
        return;
      case 'deliver':
        for (const delivery of frame.messages) this.#owner.onDelivery(delivery);
        return;
      case 'role':
        this.#updateMaster();
        if (connection.isMaster) {
          // a promoted slave already holds every subscription and every send it stored as a slave
          // ...but not what it refused: those refusals are its answer now; one still on its way
          // reaches the subscription as the master's answer when it comes
          for (const subscription of this.#owner.subscriptions()) {
            if (!this.#serves(subscription.queue)) continue;
            const answered = this.#slaveAnswers.get(subscription)?.get(connection);
            if (answered === 'pending') continue;
            const refused = answered ? [...answered.values()] : [];
            subscription.onMasterReply({ type: 'reply', req: 0, ...(refused.length > 0 ? { refused } : {}) });
          }
          for (const pending of [...this.#owner.outbox.values()]) {
            if (pending.storedBy.has(connection.serviceId)) this.#owner.outbox.settle(pending.message.messageId, null);
            // ...and what it refused as a slave (that answer did not count: E_LIMIT of a broker
            // between two terms of its lease, issue 31) it is asked again, as master: its answer
            // now settles the send, rather than sendTimeout's E_NO_MASTER
            else if (pending.answeredBy.has(connection) && this.#serves(pending.queue)) {
              pending.answeredBy.delete(connection);
              connection.queuePublish(pending.message, pending.bytes);
            }
          }
        }
        return;
      case 'revoked':
        this.#owner.onRevoked(frame.sub, frame.ids, errorFromPayload(frame.error));
        return;
      case 'cluster':
        this.#owner.onCluster?.(frame);
        return;
      case 'replayEnd':
        if (this.#replays.get(frame.sub) !== connection) return;
        this.#replays.delete(frame.sub);
        this.#owner.onReplayEnd(frame);
        return;
      default:
        return;
    }
  }

  #onResults(connection: Connection, results: readonly PublishResult[]): void {
    const outbox = this.#owner.outbox;
    for (const result of results) {
      const pending = outbox.get(result.messageId);
      if (!pending) continue;
      pending.answeredBy.add(connection);
      // cluster: the queue lives on another set; the owner sends it there with the same id (SPEC §13)
      if (result.error?.code === 'E_MOVED' && this.#owner.onMoved) {
        this.#owner.onMoved(errorFromPayload(result.error), { pending });
        continue;
      }
      // a master at soft-stop refuses: with mirrors, the send waits for the next master (SPEC §9)
      if (connection.isMaster && result.error?.code === 'E_STOPPING' && this.#connections.length > 1) continue;
      // E_NO_PLACEMENT: etcd is out of reach, so there is no master to wait for either (SPEC §13)
      if (connection.isMaster || (result.error?.code === 'E_NO_PLACEMENT' && !this.#master)) outbox.settle(result.messageId, result.error ? errorFromPayload(result.error) : null);
      else if (!result.error) pending.storedBy.add(connection.serviceId);
    }
  }
}

function isNetworkError(error: WhiskerError): boolean {
  return error.code === 'E_DISCONNECTED';
}

/**
 * E_LIMIT before `welcome` (connection budgets full), or the broker's 5 s handshake ran out (a
 * swamped broker, not a verdict on the key). The link redials with back-off and jitter; connect()
 * waits till connectTimeout. The timeout's message is fixed by docs/protocol.md#handshake.
 */
function isBudgetRefusal(error: WhiskerError | null): boolean {
  return error?.code === 'E_LIMIT' || (error?.code === 'E_AUTH' && error.message === 'Handshake timeout');
}
