import type { ClusterFrame } from '../protocol/cluster.js';
import { errorFromPayload, type WhiskerError } from '../protocol/errors.js';
import type { ClientFrame, Delivery, ReplyFrame } from '../protocol/frames.js';
import { type HostTarget, parseHost } from '../link/hosts.js';
import type { ClientKeys } from '../link/keys.js';
import { Brokers, type BrokersOwner } from './brokers.js';
import type { ClientOptions } from './options.js';
import type { PendingSend } from './outbox.js';
import type { ClientSubscription } from './subscription.js';

/**
 * The mirror sets of a cluster as one client uses them (SPEC §13, docs/client.md#clusters): the
 * brokers of `hosts` (the seed set) with the other brokers the map names for that set, and the
 * brokers of each other set the client uses, dialed lazily. Each message, subscription and ack goes to every broker of the set that owns its queue
 * (Brokers keeps SPEC §9's rule inside a set). The map comes from the brokers (`cluster` frames);
 * an E_MOVED answer updates it and the send or subscription goes to its set, same message id.
 * Without a cluster (no `cluster` frame) everything goes to the seed set, as before.
 */
export class Sets {
  readonly #options: ClientOptions;
  readonly #keys: ClientKeys;
  readonly #owner: BrokersOwner;
  readonly #seed: Brokers;
  /** the seed's set, once a broker named it */
  #seedSet: string | null = null;
  readonly #others = new Map<string, Brokers>();
  readonly #hosts = new Map<string, string[]>();
  readonly #placements = new Map<string, string>();
  /** where each subscription was registered last, by sub: its acks and id changes go there */
  readonly #subscribedOn = new Map<number, Brokers>();
  /** the set each send went to last: a second E_MOVED for it (each broker of a set answers) sends it once */
  readonly #sentTo = new WeakMap<PendingSend, Brokers>();
  /** the token of the hosts the client was given: the map carries none (SPEC §13) */
  readonly #token: string | undefined;

  constructor(options: ClientOptions, keys: ClientKeys, owner: BrokersOwner) {
    this.#options = options;
    this.#keys = keys;
    this.#owner = owner;
    this.#token = options.hosts.find((h) => h.socketToken)?.socketToken;
    this.#seed = new Brokers(options, keys, this.#ownerFor(null));
  }

  get maxMessageBytes(): number {
    let bytes = this.#seed.maxMessageBytes;
    for (const brokers of this.#others.values()) bytes = Math.min(bytes, brokers.maxMessageBytes);
    return bytes;
  }

  isConnected(): boolean {
    return this.#seed.isConnected() || [...this.#others.values()].some((b) => b.isConnected());
  }

  start(cb: (err: WhiskerError | null) => void): void {
    this.#seed.start(cb);
  }

  async close(): Promise<void> {
    await Promise.all([this.#seed.close(), ...[...this.#others.values()].map((b) => b.close())]);
  }

  keyRefusal(): WhiskerError | null {
    return this.#seed.keyRefusal();
  }

  retryRefused(): void {
    this.#seed.retryRefused();
    for (const brokers of this.#others.values()) brokers.retryRefused();
  }

  request(subscription: ClientSubscription, build: (req: number) => ClientFrame, onMasterReply: (reply: ReplyFrame | null) => void): void {
    const brokers = this.#subscribedOn.get(subscription.sub) ?? this.#route(subscription.queue);
    if (!brokers) return onMasterReply(null);
    brokers.request(build, (reply) => {
      // an addIds that placed its queue on another set: the whole subscription goes there; the
      // caller waits for that set's master like a subscribe made before any master (null)
      if (reply?.error?.code !== 'E_MOVED') return onMasterReply(reply);
      this.#moved(errorFromPayload(reply.error), { subscription });
      onMasterReply(null);
    }, subscription);
  }

  /** a replay goes to the set that holds the queue's history; an E_MOVED sends it there, up to MAX_REPLAY_HOPS sets */
  replay(queue: string, sub: number, build: (req: number) => ClientFrame, onReply: (reply: ReplyFrame | null) => void, hops = 0): void {
    const brokers = this.#route(queue) ?? this.#seed;
    brokers.replay(sub, build, (reply) => {
      if (reply?.error?.code !== 'E_MOVED') return onReply(reply);
      // never surfaced as E_MOVED: a move that says not where, or sets that keep sending it on, end it as no broker to replay from
      if (!this.#learnMove(queue, errorFromPayload(reply.error)) || hops + 1 >= MAX_REPLAY_HOPS) return onReply(null);
      this.replay(queue, sub, build, onReply, hops + 1);
    });
  }

  cancelReplay(sub: number): void {
    this.#seed.cancelReplay(sub);
    for (const brokers of this.#others.values()) brokers.cancelReplay(sub);
  }

  subscribe(subscription: ClientSubscription): void {
    const brokers = this.#route(subscription.queue);
    if (!brokers) return; // the set has no known broker yet: sent when one connects
    this.#subscribedOn.set(subscription.sub, brokers);
    brokers.subscribe(subscription);
  }

  publish(pending: PendingSend): void {
    const brokers = this.#route(pending.queue);
    if (!brokers) return; // the set has no known broker yet: sent when one connects, else E_NO_MASTER at sendTimeout
    if (this.#seedSet !== null) this.#sentTo.set(pending, brokers); // without a cluster nothing answers E_MOVED
    brokers.publish(pending);
  }

  settle(delivery: Delivery, ok: boolean, delaySeconds: number): void {
    (this.#subscribedOn.get(delivery.sub) ?? this.#seed).settle(delivery, ok, delaySeconds);
  }

  touch(delivery: Delivery): boolean {
    return (this.#subscribedOn.get(delivery.sub) ?? this.#seed).touch(delivery);
  }

  /** a subscription's flow limit, to the set it lives on (docs/protocol.md#flow) */
  flow(sub: number, limit: number | null): boolean {
    return (this.#subscribedOn.get(sub) ?? this.#seed).flow(sub, limit);
  }

  forget(sub: number): void {
    this.#subscribedOn.delete(sub);
  }

  /** the brokers of the set that owns `queue`: the seed's while not placed (its broker places it); null while the set has no known broker */
  #route(queue: string): Brokers | null {
    const set = this.#placements.get(queue);
    if (set === undefined || set === this.#seedSet || this.#seedSet === null) return this.#seed;
    const known = this.#others.get(set);
    if (known) return known;
    const hosts = this.#hosts.get(set);
    if (!hosts || hosts.length === 0) return null;
    const brokers = new Brokers(this.#options, this.#keys, this.#ownerFor(set), this.#targets(hosts));
    this.#others.set(set, brokers);
    brokers.start(() => undefined);
    return brokers;
  }

  #targets(hosts: readonly string[]): HostTarget[] {
    const targets: HostTarget[] = [];
    for (const host of hosts) {
      try {
        targets.push(parseHost(this.#token ? `${host}#${this.#token}` : host));
      } catch {
        // a host the broker could not have advertised (config checks it): skipped
      }
    }
    return targets;
  }

  /** what one set's Brokers is told: the client's owner, narrowed to the queues of that set */
  #ownerFor(set: string | null): BrokersOwner {
    const owner = this.#owner;
    const isSeed = set === null;
    const self = () => (isSeed ? this.#seed : this.#others.get(set));
    return {
      subscriptions: () => owner.subscriptions(),
      outbox: owner.outbox,
      onDelivery: (delivery) => owner.onDelivery(delivery),
      onRevoked: (sub, ids, error) => owner.onRevoked(sub, ids, error),
      onReplayEnd: (frame) => owner.onReplayEnd(frame),
      onReplaysLost: (subs, error) => owner.onReplaysLost(subs, error),
      // connect, reconnect and disconnect speak of the brokers of `hosts`; `master` names its set
      emit: (event, ...args) => {
        if (event === 'master') return owner.emit('master', args[0] ?? null, isSeed ? this.#seedSet : set);
        if (isSeed || event === 'stale') owner.emit(event, ...args);
      },
      onError: (error) => owner.onError(error),
      serves: (queue) => this.#route(queue) === self(),
      onMoved: (error, moved) => this.#moved(error, moved),
      onCluster: (frame) => this.#cluster(frame),
    };
  }

  #cluster(frame: ClusterFrame): void {
    if (this.#seedSet === null) this.#seedSet = frame.set;
    if (frame.full && frame.set === this.#seedSet) this.#placements.clear();
    if (frame.sets) for (const set of frame.sets) this.#learnHosts(set.name, set.hosts);
    const moved = new Set<string>();
    for (const [queue, set] of frame.placed) {
      if (this.#placements.get(queue) !== set) moved.add(queue);
      this.#placements.set(queue, set);
    }
    for (const queue of frame.removed) this.#placements.delete(queue);
    if (moved.size > 0) {
      this.#follow(moved);
      this.#reroute(moved);
    }
  }

  /**
   * Sends of these queues still out on another set than the one their queue is routed to now go
   * there at once, in the order they were made, before any send made from now on: one the old set
   * took before it saw a move is in its hand-over too (the new set keeps it once, in the hand-over's
   * place), and one it answers `E_MOVED` is not sent again. Waiting for each `E_MOVED` instead let
   * newer sends of an id reach the new set first (the order per id broke, SPEC §13).
   */
  #reroute(queues: ReadonlySet<string>): void {
    if (this.#seedSet === null) return;
    for (const pending of this.#owner.outbox.values()) {
      if (!queues.has(pending.queue)) continue;
      const target = this.#route(pending.queue);
      // one sent before the map came went to the seed set
      if (!target || (this.#sentTo.get(pending) ?? this.#seed) === target) continue;
      this.#sentTo.set(pending, target);
      target.publish(pending);
    }
  }

  /**
   * Queues placed on another set now (`whisker move`, SPEC §13): their subscriptions are
   * registered there (the new set delivers once the move is done); acks go there from now on.
   */
  #follow(queues: ReadonlySet<string>): void {
    if (this.#seedSet === null) return;
    for (const subscription of this.#owner.subscriptions()) {
      if (!queues.has(subscription.queue)) continue;
      const known = this.#subscribedOn.get(subscription.sub);
      if (!known) continue;
      const target = this.#route(subscription.queue);
      if (!target || target === known) continue;
      this.#subscribedOn.set(subscription.sub, target);
      target.resubscribe(subscription);
    }
  }

  /**
   * brokers of `set` the map names: dialed by the set's Brokers. The seed's own set too: a client
   * given one broker of it (a slave, or a master that dies) reaches the set's master through them
   */
  #learnHosts(set: string, hosts: readonly string[]): void {
    const known = this.#hosts.get(set) ?? [];
    const added = hosts.filter((h) => !known.includes(h));
    if (added.length === 0) return;
    this.#hosts.set(set, [...known, ...added]);
    const brokers = set === this.#seedSet ? this.#seed : this.#others.get(set);
    brokers?.addHosts(this.#targets(added));
  }

  /** what an E_MOVED says of `queue` joins the map: false when it does not say where */
  #learnMove(queue: string, error: WhiskerError): boolean {
    const details = movedDetails(error.details);
    if (!details) return false;
    this.#learnHosts(details.set, details.hosts);
    this.#placements.set(queue, details.set);
    return true;
  }

  /** E_MOVED (SPEC §13): the map learns where the queue is; the send or subscription goes there, once */
  #moved(error: WhiskerError, moved: { pending: PendingSend } | { subscription: ClientSubscription }): void {
    const queue = 'pending' in moved ? moved.pending.queue : moved.subscription.queue;
    const before = this.#placements.get(queue);
    // a broker that says moved but not where: the send waits for its timeout (never surfaced as E_MOVED)
    if (!this.#learnMove(queue, error)) return;
    const target = this.#route(queue);
    if ('pending' in moved) {
      // every send of the queue still out elsewhere goes with it, in order (#reroute)
      if (target && (this.#placements.get(queue) !== before || (this.#sentTo.get(moved.pending) ?? this.#seed) !== target)) this.#reroute(new Set([queue]));
      return;
    }
    const { subscription } = moved;
    if (!target || this.#subscribedOn.get(subscription.sub) === target) return;
    this.#subscribedOn.set(subscription.sub, target);
    target.resubscribe(subscription);
  }
}

/** sets one replay may be sent to in turn, each answering E_MOVED, before it ends (a placement changing meanwhile) */
const MAX_REPLAY_HOPS = 4;

/** `details` of an E_MOVED: `{ set, hosts }`, checked as a cluster frame's fields are */
function movedDetails(details: unknown): { set: string; hosts: string[] } | null {
  if (typeof details !== 'object' || details === null) return null;
  const { set, hosts } = details as { set?: unknown; hosts?: unknown };
  if (typeof set !== 'string' || !/^[A-Za-z0-9._-]{1,64}$/.test(set)) return null;
  const list = Array.isArray(hosts) ? hosts.slice(0, 100).filter((h): h is string => typeof h === 'string' && h.length > 0 && h.length <= 512 && !h.includes('#') && !/\s/.test(h)) : [];
  return { set, hosts: list };
}

