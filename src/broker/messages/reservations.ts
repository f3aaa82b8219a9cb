import { WhiskerError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/logger.js';
import type { Subscription } from '../queue/subscription.js';
import type { ReservationFile, ReservationRecord } from '../store/reservation-file.js';

/** what a master's mirrors learn of its reservations (src/broker/mirror/feed.ts) */
export type ReservationsChanged = (set: readonly ReservationRecord[], released: readonly string[]) => void;

export interface ReservationsOptions {
  readonly file: ReservationFile | null;
  readonly log: Logger;
  readonly now: () => number;
  /** reservationHold, seconds, read at each use so a reload applies */
  readonly holdSeconds: () => number;
  /** limits.maxReservations */
  readonly limit: () => number;
  /** limits.maxReservationsPerClient */
  readonly limitPerName: () => number;
}

interface Entry {
  readonly owner: string;
  readonly since: number;
  releaseAt: number | null;
}

/** how often a master looks for reservations whose hold ran out */
const SWEEP_MS = 1_000;

/**
 * Reserved ids (SPEC §5, a `!` read pattern): each belongs to a client NAME, which every
 * instance of that name may subscribe to. It outlives the name's last subscription by
 * reservationHold. Only a master takes or releases one; a slave keeps its master's table
 * (mirrored) and refuses by it. Durable in the data directory.
 */
export class Reservations {
  readonly #options: ReservationsOptions;
  /** `endpoint/version/id` -> who holds it */
  readonly #entries = new Map<string, Entry>();
  /** how many of #entries each name holds (limits.maxReservationsPerClient) */
  readonly #perOwner = new Map<string, number>();
  /** live subscriptions on reserved ids here, by channel: whose name still uses it */
  readonly #live = new Map<string, Set<Subscription>>();
  #changed: ReservationsChanged | null = null;
  #isMaster = false;
  #timer: NodeJS.Timeout | null = null;
  /** the reservationHold the running holds were given, so a reload can move their ends */
  #holdMsApplied: number;

  constructor(options: ReservationsOptions) {
    this.#options = options;
    this.#holdMsApplied = this.#holdMs();
  }

  /** what was stored: a reservation nobody subscribes to now runs out a hold from now */
  restore(): void {
    const now = this.#options.now();
    for (const r of this.#options.file?.load() ?? []) {
      this.#put(r.channel, { owner: r.owner, since: r.since, releaseAt: r.releaseAt ?? now + this.#holdMs() });
    }
    this.#sweep();
  }

  observe(changed: ReservationsChanged | null): void {
    this.#changed = changed;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** the live holder of `channel` (its hold not run out), if any */
  ownerOf(channel: string): string | undefined {
    const entry = this.#entries.get(channel);
    if (!entry || (entry.releaseAt !== null && entry.releaseAt <= this.#options.now())) return undefined;
    return entry.owner;
  }

  /**
   * `subscription` asks for the reserved `channel`: undefined when it may have it (on a master,
   * now its name's), else the name that holds it. E_LIMIT past limits.maxReservations.
   */
  take(subscription: Subscription, channel: string): string | undefined {
    const name = subscription.clientName;
    const owner = this.ownerOf(channel);
    if (owner !== undefined && owner !== name) return owner;
    if (this.#isMaster) {
      const entry = this.#entries.get(channel);
      if (owner === undefined) {
        if (entry) this.#drop(channel); // its hold ran out
        const limit = this.#options.limit();
        if (this.#entries.size >= limit) throw new WhiskerError('E_LIMIT', `Too many reserved ids (limit ${limit})`);
        const perName = this.#options.limitPerName();
        if ((this.#perOwner.get(name) ?? 0) >= perName) throw new WhiskerError('E_LIMIT', `Too many reserved ids for this client name (limit ${perName})`);
        this.#set(channel, { owner: name, since: this.#options.now(), releaseAt: null });
      } else if (entry && entry.releaseAt !== null) {
        this.#set(channel, { ...entry, releaseAt: null });
      }
    }
    let live = this.#live.get(channel);
    if (!live) this.#live.set(channel, (live = new Set()));
    live.add(subscription);
    return undefined;
  }

  /** `subscription` no longer reads `channel`: its name's hold starts when it was the last */
  left(subscription: Subscription, channel: string): void {
    const live = this.#live.get(channel);
    if (!live?.delete(subscription)) return;
    if (live.size === 0) this.#live.delete(channel);
    const entry = this.#entries.get(channel);
    if (!this.#isMaster || !entry || entry.owner !== subscription.clientName || entry.releaseAt !== null) return;
    if (this.#ownerUses(channel, entry.owner)) return;
    this.#applyHoldChange(); // a reload not swept yet must not move this new hold too
    const holdMs = this.#holdMs();
    if (holdMs === 0) this.#remove([channel]);
    else this.#set(channel, { ...entry, releaseAt: this.#options.now() + holdMs });
  }

  list(): ReservationRecord[] {
    const records: ReservationRecord[] = [];
    for (const [channel, e] of this.#entries) records.push({ channel, owner: e.owner, since: e.since, releaseAt: e.releaseAt });
    return records;
  }

  /** `whisker reservations release CHANNEL`: free now (live subscriptions keep their id) */
  release(channel: string): ReservationRecord | undefined {
    const entry = this.#entries.get(channel);
    if (!entry) return undefined;
    this.#remove([channel]);
    return { channel, owner: entry.owner, since: entry.since, releaseAt: entry.releaseAt };
  }

  /** a revoked name's reservations are released (SPEC §5); returns how many */
  releaseName(name: string): number {
    const channels = [...this.#entries].filter(([, e]) => e.owner === name).map(([channel]) => channel);
    this.#remove(channels);
    return channels.length;
  }

  /**
   * This broker now acts as master (or no longer): it decides from now on, from the table its
   * master mirrored. Returns subscriptions here on an id another name holds, to be removed.
   */
  setMaster(isMaster: boolean): Array<{ subscription: Subscription; channel: string }> {
    const was = this.#isMaster;
    this.#isMaster = isMaster;
    if (!isMaster) {
      this.#stopSweeps();
      return [];
    }
    this.#timer ??= setInterval(() => this.#sweep(), SWEEP_MS).unref();
    if (was) return [];
    this.#holdMsApplied = this.#holdMs();
    const now = this.#options.now();
    const evicted: Array<{ subscription: Subscription; channel: string }> = [];
    this.#sweep();
    for (const [channel, entry] of this.#entries) {
      const uses = this.#ownerUses(channel, entry.owner);
      if (uses && entry.releaseAt !== null) this.#set(channel, { ...entry, releaseAt: null });
      else if (!uses && entry.releaseAt === null) this.#set(channel, { ...entry, releaseAt: now + this.#holdMs() });
    }
    // subscribed here while the id was free by the table: the first name found takes it
    for (const [channel, live] of this.#live) {
      for (const subscription of live) {
        let owner = this.ownerOf(channel);
        if (owner === undefined && this.#entries.size < this.#options.limit() && (this.#perOwner.get(subscription.clientName) ?? 0) < this.#options.limitPerName()) {
          this.#set(channel, { owner: subscription.clientName, since: now, releaseAt: null });
          owner = subscription.clientName;
        }
        if (owner !== undefined && owner !== subscription.clientName) evicted.push({ subscription, channel });
      }
    }
    return evicted;
  }

  /** the reservations on `queue`'s ids (`endpoint/version/`), for a move's hand-over (SPEC §13) */
  ofQueue(queue: string): ReservationRecord[] {
    const prefix = `${queue}/`;
    const now = this.#options.now();
    return this.list().filter((r) => r.channel.startsWith(prefix) && (r.releaseAt === null || r.releaseAt > now));
  }

  /**
   * A move's hand-over: the old set's reservations of a queue, owner and hold kept, win over
   * what this set gave meanwhile. A hold running on the old set runs on; one whose owner was
   * subscribed there starts now unless the owner subscribes here (its subscription moves too).
   * Returns the subscriptions here of other names on those ids, to be removed.
   */
  adopt(records: readonly ReservationRecord[]): Array<{ subscription: Subscription; channel: string }> {
    const now = this.#options.now();
    const evicted: Array<{ subscription: Subscription; channel: string }> = [];
    for (const r of records) {
      const uses = this.#ownerUses(r.channel, r.owner);
      const releaseAt = uses ? null : (r.releaseAt ?? now + this.#holdMs());
      if (releaseAt !== null && releaseAt <= now) continue;
      const entry: Entry = { owner: r.owner, since: r.since, releaseAt };
      if (this.#isMaster) this.#set(r.channel, entry);
      else {
        this.#put(r.channel, entry);
        this.#persist();
      }
      for (const subscription of this.#live.get(r.channel) ?? []) if (subscription.clientName !== r.owner) evicted.push({ subscription, channel: r.channel });
    }
    return evicted;
  }

  /** a slave applies its master's table: `full` replaces what it had */
  applyFromMaster(full: boolean, set: readonly ReservationRecord[], released: readonly string[]): void {
    if (this.#isMaster) return;
    if (full) for (const channel of [...this.#entries.keys()]) this.#drop(channel);
    for (const r of set) this.#put(r.channel, { owner: r.owner, since: r.since, releaseAt: r.releaseAt });
    for (const channel of released) this.#drop(channel);
    this.#persist();
  }

  /** a change not on disk yet: a subscribe that took an id is answered once it is (SPEC §5, durable) */
  get unwritten(): Promise<void> | null {
    return this.#options.file?.pending ?? null;
  }

  close(): Promise<void> {
    this.#stopSweeps();
    return this.#options.file?.flushed() ?? Promise.resolve();
  }

  #stopSweeps(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  #holdMs(): number {
    return this.#options.holdSeconds() * 1000;
  }

  #ownerUses(channel: string, owner: string): boolean {
    for (const subscription of this.#live.get(channel) ?? []) if (subscription.clientName === owner) return true;
    return false;
  }

  #sweep(): void {
    if (this.#isMaster) this.#applyHoldChange();
    const now = this.#options.now();
    const expired: string[] = [];
    for (const [channel, entry] of this.#entries) if (entry.releaseAt !== null && entry.releaseAt <= now) expired.push(channel);
    if (expired.length > 0 && this.#isMaster) this.#remove(expired);
  }

  /** a reload changed reservationHold: every running hold ends that much sooner or later */
  #applyHoldChange(): void {
    const holdMs = this.#holdMs();
    const shift = holdMs - this.#holdMsApplied;
    this.#holdMsApplied = holdMs;
    if (shift === 0) return;
    const moved: ReservationRecord[] = [];
    for (const [channel, entry] of this.#entries) {
      if (entry.releaseAt === null) continue;
      entry.releaseAt += shift;
      moved.push({ channel, owner: entry.owner, since: entry.since, releaseAt: entry.releaseAt });
    }
    if (moved.length === 0) return;
    this.#persist();
    this.#changed?.(moved, []);
  }

  #set(channel: string, entry: Entry): void {
    this.#put(channel, entry);
    this.#persist();
    this.#changed?.([{ channel, owner: entry.owner, since: entry.since, releaseAt: entry.releaseAt }], []);
  }

  #remove(channels: readonly string[]): void {
    if (channels.length === 0) return;
    for (const channel of channels) this.#drop(channel);
    this.#persist();
    this.#changed?.([], channels);
    this.#options.log.info('reservations released', { channels: channels.slice(0, 20), count: channels.length });
  }

  /** every change to #entries goes through #put and #drop, which keep #perOwner */
  #put(channel: string, entry: Entry): void {
    this.#drop(channel);
    this.#entries.set(channel, entry);
    this.#perOwner.set(entry.owner, (this.#perOwner.get(entry.owner) ?? 0) + 1);
  }

  #drop(channel: string): void {
    const entry = this.#entries.get(channel);
    if (!entry) return;
    this.#entries.delete(channel);
    const left = (this.#perOwner.get(entry.owner) ?? 1) - 1;
    if (left === 0) this.#perOwner.delete(entry.owner);
    else this.#perOwner.set(entry.owner, left);
  }

  #persist(): void {
    this.#options.file?.changed(() => this.list());
  }
}
