import type { Etcd3 } from 'etcd3';
import type { ClusterFrame } from '../../protocol/cluster.js';
import { PLACEMENTS_PER_FRAME } from '../../protocol/cluster.js';
import { WhiskerError } from '../../protocol/errors.js';
import type { ClusterConfig, ElectionConfig } from '../../config/types.js';
import type { Logger } from '../../runtime/logger.js';
import { etcdClient, withTimeout } from '../mirror/election.js';
import { Membership } from './membership.js';
import { Placements } from './placements.js';
import { rendezvous } from './rendezvous.js';
import { randomBytes } from 'node:crypto';
import type { BrokerStats, Member, Move, Placement } from './types.js';
import { routeOf } from './types.js';
import { WatchedPrefix } from './watched.js';

/** the cluster as one broker sees it (`whisker cluster status`, SPEC §13) */
export interface ClusterView {
  readonly set: string;
  readonly sets: ReadonlyArray<{ readonly name: string; readonly brokers: readonly Member[]; readonly placements: number }>;
  readonly placements: number;
  readonly maxPlacements: number;
  /** moves under way (`whisker move`) */
  readonly moves: ReadonlyArray<{ readonly queue: string; readonly from: string; readonly to: string; readonly phase: string }>;
  /** the members and placements were read from etcd once at least (false: etcd never answered since start) */
  readonly mapRead: boolean;
}

/** what the cluster asks of the broker: the config of the moment (pins, the bound), and where changes go */
export interface ClusterHooks {
  pin(queue: string): string | undefined;
  /** the queue of `queue`'s dead-letter channel, if it has one: placed with it */
  deadLetterOf(queue: string): string | undefined;
  /** queues whose dead-letter channel is `queue` (a dead-letter queue asked for first goes with its source) */
  deadLetterSources(queue: string): readonly string[];
  maxPlacements(): number;
  /** the map changed: these frames tell a client what changed (coalesced per tick) */
  changed(frames: readonly ClusterFrame[]): void;
  /** `name`'s binding to `pem` went from etcd: its key was revoked on some set, and is here too */
  keyUnbound(name: string, pem: string): void;
  /** this broker's queues summed, published with its membership (stats.ts) */
  stats?(): BrokerStats;
}

/** etcd calls of the cluster are bounded: a placement answers E_NO_PLACEMENT, it never hangs */
const ETCD_TIMEOUT_MS = 2_000;

/**
 * This broker's view of the cluster of mirror sets (SPEC §13, docs/operations.md#running-a-cluster):
 * who is in which set (membership.ts), which set owns which queue (placements.ts), and the map
 * clients are told. `owner(queue)` is the hot path: one Map lookup.
 */
export class Cluster {
  readonly set: string;
  readonly #client: Etcd3;
  readonly #membership: Membership;
  readonly #placements: Placements;
  /** `<prefix>/keys/`: a binding deleted is a revocation on some set (SPEC §13), applied here */
  readonly #keyBindings: WatchedPrefix;
  readonly #hooks: ClusterHooks;
  readonly #log: Logger;
  readonly #prefix: string;
  readonly #weight: number;
  #pendingPlaced = new Map<string, string>();
  #pendingRemoved = new Set<string>();
  #setsChanged = false;
  #flushScheduled = false;
  #moveListener: ((queue: string, placement: Placement | undefined) => void) | null = null;

  static async create(config: ClusterConfig, election: ElectionConfig, serviceId: string, log: Logger, hooks: ClusterHooks): Promise<Cluster> {
    return new Cluster(config, election, serviceId, log, hooks, await etcdClient(election));
  }

  private constructor(config: ClusterConfig, election: ElectionConfig, serviceId: string, log: Logger, hooks: ClusterHooks, client: Etcd3) {
    this.set = config.set;
    this.#prefix = config.prefix;
    this.#weight = config.weight;
    this.#client = client;
    this.#hooks = hooks;
    this.#log = log;
    const self = { set: config.set, serviceId, advertise: config.advertise, weight: config.weight };
    this.#membership = new Membership(client, config.prefix, self, election.leaseTtl, log, ETCD_TIMEOUT_MS, () => this.#changed({ sets: true }), hooks.stats && (() => hooks.stats!()));
    this.#placements = new Placements(client, config.prefix, log, ETCD_TIMEOUT_MS, {
      placed: (queue, set) => this.#changed({ placed: [queue, set] }),
      removed: (queue) => this.#changed({ removed: queue }),
      changed: (queue, placement) => this.#moveListener?.(queue, placement),
    });
    const bindings = { put: () => {}, loaded: () => {}, deleted: (name: string, pem?: string) => void (pem !== undefined && hooks.keyUnbound(name, pem)) };
    this.#keyBindings = new WatchedPrefix(client, `${config.prefix}/keys/`, bindings, log, ETCD_TIMEOUT_MS, true);
  }

  start(): void {
    this.#membership.start();
    this.#placements.start();
    this.#keyBindings.start();
  }

  async close(): Promise<void> {
    await Promise.all([this.#membership.close(), this.#placements.close(), this.#keyBindings.close()]);
    this.#client.close();
  }

  /** this broker's role, registered with its membership (`whisker cluster status` shows every set's master) */
  role(isMaster: boolean, epoch: number | null): void {
    this.#membership.role(isMaster, epoch);
  }

  /** the set that takes `queue`'s sends and subscriptions (during a move, the new one), or undefined while it is not placed */
  owner(queue: string): string | undefined {
    const placement = this.#placements.get(queue);
    return placement && routeOf(placement);
  }

  /** resolves once the placement map was read from etcd (the placement of every queue is known then) */
  placementsRead(): Promise<void> {
    return this.#placements.whenLoaded();
  }

  /** told every change of a placement's value (src/broker/cluster/move.ts follows moves by it) */
  onPlacementChange(listener: (queue: string, placement: Placement | undefined) => void): void {
    this.#moveListener = listener;
  }

  /**
   * `whisker move queue --to set` (SPEC §13): writes the move's state into the placement, if the
   * queue is placed and on another set. Resolves to the placement as it then is.
   */
  async startMove(queue: string, to: string): Promise<Placement> {
    const current = await this.#placements.read(queue);
    if (!current?.placement) throw new WhiskerError('E_NO_PLACEMENT', `Queue ${queue} is not placed`, { queue });
    const { placement, raw } = current;
    if (placement.move) return placement.move.to === to ? placement : Promise.reject(new WhiskerError('E_LIMIT', `Queue ${queue} is moving to ${placement.move.to} already`, { queue }));
    if (placement.set === to) return placement;
    if (!this.#membership.liveSets().some((set) => set.name === to)) throw new WhiskerError('E_NO_PLACEMENT', `Set ${to} has no live broker (a set none of whose brokers is up, or a name no broker registered: whisker cluster status lists the sets)`, { queue, set: to });
    const move: Move = { to, phase: 'export', id: randomBytes(8).toString('hex') };
    const next: Placement = { set: placement.set, move };
    if (!(await this.#placements.compareAndPut(queue, raw, next))) return this.startMove(queue, to);
    return next;
  }

  /** the placement's value as etcd holds it now */
  readPlacement(queue: string): Promise<{ raw: string; placement: Placement | null } | null> {
    return this.#placements.read(queue);
  }

  /** the raw cached value (what compareAndPut compares with) */
  rawPlacement(queue: string): string | undefined {
    return this.#placements.raw(queue);
  }

  compareAndPut(queue: string, expected: string, placement: Placement): Promise<boolean> {
    return this.#placements.compareAndPut(queue, expected, placement);
  }

  #moveKey(queue: string, id: string, part?: string): string {
    return `${this.#prefix}/moves/${queue}/${id}/${part === undefined ? '' : `${part}/`}`;
  }

  /** a move's hand-over, written by the old set's master: one key per chunk, numbered from 0, under its own `part` */
  async putMoveChunks(queue: string, id: string, part: string, chunks: readonly string[]): Promise<void> {
    const prefix = this.#moveKey(queue, id, part);
    for (let i = 0; i < chunks.length; i++) await withTimeout(this.#client.put(`${prefix}${String(i).padStart(6, '0')}`).value(chunks[i]!).exec(), ETCD_TIMEOUT_MS);
  }

  /** the chunks of a move, in order; null when some are missing (deleted, or not all written) */
  async readMoveChunks(queue: string, id: string, part: string, count: number): Promise<string[] | null> {
    const read = await withTimeout(this.#client.getAll().prefix(this.#moveKey(queue, id, part)).sort('Key', 'Ascend').strings(), ETCD_TIMEOUT_MS * 5);
    const chunks = Object.keys(read).sort().map((key) => read[key]!);
    return chunks.length === count ? chunks : null;
  }

  /** every part of a move (written by any master of the old set) */
  deleteMoveChunks(queue: string, id: string): Promise<unknown> {
    return withTimeout(this.#client.delete().prefix(this.#moveKey(queue, id)).exec(), ETCD_TIMEOUT_MS);
  }

  placement(queue: string): Placement | undefined {
    return this.#placements.get(queue);
  }

  /** places `queue` (after its request passed rules and format): the owning set, or E_LIMIT / E_NO_PLACEMENT */
  place(queue: string): Promise<string> {
    const hooks = this.#hooks;
    const placing = this.#placements.place(queue, hooks.maxPlacements(), () => {
      const pinned = hooks.pin(queue);
      if (pinned) return pinned;
      // a dead-letter queue goes where its source is: the source's master makes its messages
      for (const source of hooks.deadLetterSources(queue)) {
        const set = this.owner(source);
        if (set) return set;
      }
      // this broker's own set is live whatever the watch has shown yet (a broker just started)
      const live = this.#membership.liveSets();
      if (!live.some((set) => set.name === this.set)) live.push({ name: this.set, weight: this.#weight });
      return rendezvous(queue, live);
    });
    const deadLetter = hooks.deadLetterOf(queue);
    if (deadLetter && deadLetter !== queue) {
      void placing.then((set) => {
        if (this.owner(deadLetter) === undefined) return this.#placements.place(deadLetter, hooks.maxPlacements(), () => set);
        if (this.owner(deadLetter) !== set) this.#log.warn('dead-letter queue placed on another set: dead letters stay on the set of their queue', { queue, deadLetter, set });
        return undefined;
      }).catch(() => undefined);
    }
    return placing;
  }

  /** the master forgot an idle queue of this set: its placement goes too (best effort: etcd may be out of reach) */
  forget(queue: string, stillHere: () => boolean): void {
    this.#placements.forget(queue, this.set, stillHere).catch((error: unknown) => this.#log.debug('placement not deleted', { queue, error: (error as Error).message }));
  }

  /**
   * Key bindings are one per cluster (SPEC §4, §13): a name new to this set is bound to its key
   * by create-if-absent of `<prefix>/keys/<name>`; resolves to the key the name is bound to.
   */
  async bindKey(name: string, pem: string): Promise<string> {
    const key = `${this.#prefix}/keys/${name}`;
    const answer = await withTimeout(this.#client.if(key, 'Create', '==', 0).then(this.#client.put(key).value(pem)).else(this.#client.get(key)).commit(), ETCD_TIMEOUT_MS);
    if (answer.succeeded) return pem;
    return answer.responses[0]?.response_range?.kvs[0]?.value.toString() ?? pem;
  }

  /** a revoked key frees its name's binding (only if the binding is that key) */
  unbindKey(name: string, pem: string): void {
    const key = `${this.#prefix}/keys/${name}`;
    withTimeout(this.#client.if(key, 'Value', '==', pem).then(this.#client.delete().key(key)).commit(), ETCD_TIMEOUT_MS).catch((error: unknown) => this.#log.warn('key binding not freed in etcd', { name, error: (error as Error).message }));
  }

  /** the answer to a frame for a queue of another set: where it is, whom to dial (SPEC §13) */
  moved(set: string, queue: string): WhiskerError {
    return new WhiskerError('E_MOVED', `Queue ${queue} is on set ${set}`, { set, queue, hosts: this.#membership.hosts(set) });
  }

  get placementCount(): number {
    return this.#placements.size;
  }

  /** every placement as cached, for listings (read-only) */
  placementEntries(): IterableIterator<[string, Placement]> {
    return this.#placements.entries();
  }

  /** the whole map for a client that just connected, in frames of PLACEMENTS_PER_FRAME */
  mapFrames(): ClusterFrame[] {
    const placed: Array<[string, string]> = [];
    for (const [queue, placement] of this.#placements.entries()) placed.push([queue, routeOf(placement)]);
    const frames: ClusterFrame[] = [];
    for (let i = 0; i === 0 || i < placed.length; i += PLACEMENTS_PER_FRAME) {
      frames.push({ type: 'cluster', set: this.set, full: i === 0, ...(i === 0 ? { sets: this.#membership.sets() } : {}), placed: placed.slice(i, i + PLACEMENTS_PER_FRAME), removed: [] });
    }
    return frames;
  }

  /** for `whisker cluster status` and the API */
  view(): ClusterView {
    const counts = new Map<string, number>();
    const moves: Array<{ queue: string; from: string; to: string; phase: string }> = [];
    for (const [queue, placement] of this.#placements.entries()) {
      counts.set(placement.set, (counts.get(placement.set) ?? 0) + 1);
      if (placement.move) moves.push({ queue, from: placement.set, to: placement.move.to, phase: placement.move.phase });
    }
    const names = new Set([...this.#membership.sets().map((s) => s.name), ...counts.keys()]);
    const sets = [...names].sort().map((name) => ({ name, brokers: this.#membership.members(name).map((m) => ({ ...m })), placements: counts.get(name) ?? 0 }));
    return { set: this.set, sets, placements: this.#placements.size, maxPlacements: this.#hooks.maxPlacements(), moves, mapRead: this.#placements.loaded && this.#membership.loaded };
  }

  #changed(change: { sets?: true; placed?: [string, string]; removed?: string }): void {
    if (change.sets) this.#setsChanged = true;
    if (change.placed) {
      this.#pendingRemoved.delete(change.placed[0]);
      this.#pendingPlaced.set(change.placed[0], change.placed[1]);
    }
    if (change.removed) {
      this.#pendingPlaced.delete(change.removed);
      this.#pendingRemoved.add(change.removed);
    }
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    this.#flushScheduled = false;
    const placed = [...this.#pendingPlaced];
    const removed = [...this.#pendingRemoved];
    const sets = this.#setsChanged ? this.#membership.sets() : undefined;
    this.#pendingPlaced = new Map();
    this.#pendingRemoved = new Set();
    this.#setsChanged = false;
    const frames: ClusterFrame[] = [];
    for (let i = 0; i === 0 || i < Math.max(placed.length, removed.length); i += PLACEMENTS_PER_FRAME) {
      frames.push({ type: 'cluster', set: this.set, full: false, ...(i === 0 && sets ? { sets } : {}), placed: placed.slice(i, i + PLACEMENTS_PER_FRAME), removed: removed.slice(i, i + PLACEMENTS_PER_FRAME) });
    }
    this.#hooks.changed(frames);
  }
}
