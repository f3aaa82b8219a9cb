import type { Etcd3, Lease } from 'etcd3';
import type { Logger } from '../../runtime/logger.js';
import { withTimeout } from '../mirror/election.js';
import type { WeightedSet } from './rendezvous.js';
import { type BrokerStats, decodeMember, type Member } from './types.js';
import { WatchedPrefix } from './watched.js';

const RETRY_MS = 1_000;
/** how often a broker publishes its queues' counts and rates with its key (only when they changed) */
export const STATS_INTERVAL_MS = 5_000;

export interface Self {
  readonly set: string;
  readonly serviceId: string;
  readonly advertise: string;
  readonly weight: number;
}

/**
 * The live brokers of every set (SPEC §13): each broker registers `<prefix>/members/<set>/<serviceId>`
 * under a lease of the election's TTL, and follows everyone's keys. A set with no key left is
 * not live: new placements go elsewhere. No home-made membership: the lease is etcd's.
 */
export class Membership {
  readonly #client: Etcd3;
  readonly #self: Self;
  readonly #ttlSeconds: number;
  readonly #log: Logger;
  readonly #timeoutMs: number;
  readonly #key: string;
  readonly #sets = new Map<string, Map<string, Member>>();
  readonly #watched: WatchedPrefix;
  readonly #changed: () => void;
  readonly #stats: (() => BrokerStats) | null;
  #published: BrokerStats | null = null;
  /** the stats etcd holds for this broker, as sent */
  #stored: string | null = null;
  #statsTimer: NodeJS.Timeout | null = null;
  #lease: Lease | null = null;
  #role: { isMaster: boolean; epoch: number | null } = { isMaster: false, epoch: null };
  #timer: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(client: Etcd3, prefix: string, self: Self, ttlSeconds: number, log: Logger, timeoutMs: number, changed: () => void, stats?: () => BrokerStats) {
    this.#client = client;
    this.#stats = stats ?? null;
    this.#self = self;
    this.#ttlSeconds = ttlSeconds;
    this.#log = log;
    this.#timeoutMs = timeoutMs;
    this.#changed = changed;
    const members = `${prefix}/members/`;
    this.#key = `${members}${self.set}/${self.serviceId}`;
    this.#watched = new WatchedPrefix(client, members, { put: (key, value) => this.#put(key, value), deleted: (key) => this.#deleted(key), loaded: () => undefined }, log, timeoutMs);
  }

  start(): void {
    this.#watched.start();
    void this.#register();
    if (this.#stats) this.#statsTimer = setInterval(() => this.#publishStats(), STATS_INTERVAL_MS).unref();
  }

  /** the map of members was read from etcd once at least */
  get loaded(): boolean {
    return this.#watched.loaded;
  }

  /** sets with at least one live broker, with their weight (the highest a broker of it gives) */
  liveSets(): WeightedSet[] {
    const sets: WeightedSet[] = [];
    for (const [name, members] of this.#sets) {
      if (members.size === 0) continue;
      let weight = 0;
      for (const member of members.values()) weight = Math.max(weight, member.weight);
      sets.push({ name, weight });
    }
    return sets;
  }

  /** the host strings of a set's live brokers, sorted */
  hosts(set: string): string[] {
    return [...(this.#sets.get(set)?.values() ?? [])].map((m) => m.advertise).sort();
  }

  sets(): Array<{ name: string; hosts: string[] }> {
    return [...this.#sets.keys()].sort().map((name) => ({ name, hosts: this.hosts(name) })).filter((set) => set.hosts.length > 0);
  }

  members(set: string): Member[] {
    return [...(this.#sets.get(set)?.values() ?? [])];
  }

  /** the broker's role changed: its key says so (shown by `whisker cluster status`) */
  role(isMaster: boolean, epoch: number | null): void {
    if (this.#role.isMaster === isMaster && this.#role.epoch === epoch) return;
    this.#role = { isMaster, epoch };
    const lease = this.#lease;
    if (lease) void withTimeout(lease.put(this.#key).value(this.#value()).exec(), this.#timeoutMs).catch(() => undefined);
  }

  #value(): string {
    const { advertise, weight } = this.#self;
    return JSON.stringify({ advertise, weight, ...this.#role, ...(this.#published ? { stats: this.#published } : {}) });
  }

  /** a put only when the counts or rates changed since etcd took them: an idle cluster writes nothing */
  #publishStats(): void {
    const stats = this.#stats?.();
    if (!stats) return;
    this.#published = stats;
    const text = JSON.stringify(stats);
    const lease = this.#lease;
    if (!lease || text === this.#stored) return;
    withTimeout(lease.put(this.#key).value(this.#value()).exec(), this.#timeoutMs).then(
      () => void (this.#stored = text),
      () => undefined, // tried again at the next tick
    );
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#statsTimer) clearInterval(this.#statsTimer);
    await this.#watched.close();
    const lease = this.#lease;
    this.#lease = null;
    // a clean stop leaves at once: the map shows the set without this broker now, not in a TTL
    if (lease) await withTimeout(lease.revoke(), this.#timeoutMs).catch(() => undefined);
  }

  async #register(): Promise<void> {
    if (this.#closed) return;
    const lease = this.#client.lease(this.#ttlSeconds);
    this.#lease = lease;
    lease.on('lost', (error) => {
      if (this.#lease !== lease || this.#closed) return;
      this.#log.warn('cluster membership lease lost: registering again', { error: error.message });
      this.#lease = null;
      this.#retry();
    });
    try {
      await withTimeout(lease.put(this.#key).value(this.#value()).exec(), this.#timeoutMs);
      if (this.#closed) return void lease.revoke().catch(() => undefined);
      this.#log.info('registered in the cluster', { set: this.#self.set, advertise: this.#self.advertise });
    } catch (error) {
      if (this.#lease !== lease) return;
      this.#lease = null;
      lease.release();
      this.#log.debug('cluster registration failed, trying again', { error: (error as Error).message });
      this.#retry();
    }
  }

  #retry(): void {
    if (this.#closed) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#register(), RETRY_MS);
    this.#timer.unref();
  }

  #put(key: string, value: string): void {
    const [set, serviceId, ...rest] = key.split('/');
    if (!set || !serviceId || rest.length > 0) return;
    const member = decodeMember(serviceId, value);
    if (!member) return;
    let members = this.#sets.get(set);
    if (!members) this.#sets.set(set, (members = new Map()));
    const before = members.get(serviceId);
    members.set(serviceId, member);
    // clients are told hosts only: a role or stats update is no change for them
    if (!before || before.advertise !== member.advertise || before.weight !== member.weight) this.#changed();
  }

  #deleted(key: string): void {
    const [set, serviceId] = key.split('/');
    if (!set || !serviceId) return;
    if (this.#sets.get(set)?.delete(serviceId)) this.#changed();
  }
}
