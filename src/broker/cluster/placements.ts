import type { Etcd3 } from 'etcd3';
import { WhiskerError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/logger.js';
import { withTimeout } from '../mirror/election.js';
import { decodePlacement, type Placement, routeOf } from './types.js';
import { WatchedPrefix } from './watched.js';

export interface PlacementEvents {
  /** `set` takes the queue's sends now (during a move: the new set) */
  placed(queue: string, set: string): void;
  removed(queue: string): void;
  /** the placement's value changed (a move started, changed phase, ended) */
  changed(queue: string, placement: Placement | undefined): void;
}

/**
 * The placement map (SPEC §13): `<prefix>/placements/<endpoint/version>` → `{ set }`, written
 * once per queue by an etcd transaction that creates the key only if absent (two brokers racing
 * read back the one that won), cached here from a watch. Bounded by `limits.maxPlacements`.
 */
export class Placements {
  readonly #client: Etcd3;
  readonly #prefix: string;
  readonly #timeoutMs: number;
  readonly #map = new Map<string, Placement>();
  /** the value etcd holds for each placement, as read: a move changes it by compare-and-put */
  readonly #raw = new Map<string, string>();
  /** placements this broker asked etcd for and has no answer to yet, by queue */
  readonly #placing = new Map<string, Promise<string>>();
  readonly #watched: WatchedPrefix;
  readonly #events: PlacementEvents;
  #loaded = false;
  /** resolves once the map was read: a request made before waits for it (a broker just started) */
  readonly #whenLoaded: Promise<void>;
  #markLoaded!: () => void;

  constructor(client: Etcd3, prefix: string, log: Logger, timeoutMs: number, events: PlacementEvents) {
    this.#client = client;
    this.#prefix = `${prefix}/placements/`;
    this.#timeoutMs = timeoutMs;
    this.#events = events;
    this.#whenLoaded = new Promise((resolve) => (this.#markLoaded = resolve));
    this.#watched = new WatchedPrefix(client, this.#prefix, { put: (queue, value) => this.#put(queue, value), deleted: (queue) => this.#deleted(queue), loaded: () => ((this.#loaded = true), this.#markLoaded()) }, log, timeoutMs);
  }

  start(): void {
    this.#watched.start();
  }

  close(): Promise<void> {
    return this.#watched.close();
  }

  /** the map was read from etcd once at least */
  get loaded(): boolean {
    return this.#loaded;
  }

  get size(): number {
    return this.#map.size;
  }

  /** the hot path: one Map lookup */
  get(queue: string): Placement | undefined {
    return this.#map.get(queue);
  }

  entries(): IterableIterator<[string, Placement]> {
    return this.#map.entries();
  }

  /**
   * The set that owns `queue`: the cached one, else the one etcd holds after a create-if-absent
   * of `choice()`. E_LIMIT past `limit`; E_NO_PLACEMENT when etcd does not answer in time, the
   * map was never read, or no set is live.
   */
  place(queue: string, limit: number, choice: () => string | null): Promise<string> {
    const known = this.#map.get(queue);
    if (known) return Promise.resolve(routeOf(known));
    const underWay = this.#placing.get(queue);
    if (underWay) return underWay;
    if (!this.#loaded) {
      // just started: wait for the first read (bounded), then decide as usual
      const notRead = new WhiskerError('E_NO_PLACEMENT', 'Queue not placed yet and the placement map cannot be read (etcd unreachable)', { queue });
      return withTimeout(this.#whenLoaded, this.#timeoutMs).then(() => this.place(queue, limit, choice), () => Promise.reject(notRead));
    }
    if (this.#map.size + this.#placing.size >= limit) return Promise.reject(new WhiskerError('E_LIMIT', `Too many placements (limit ${limit})`, { queue }));
    const set = choice();
    if (!set) return Promise.reject(new WhiskerError('E_NO_PLACEMENT', 'Queue not placed yet and no set of the cluster is live', { queue }));
    const placing = this.#create(queue, set).finally(() => this.#placing.delete(queue));
    this.#placing.set(queue, placing);
    return placing;
  }

  /**
   * An idle queue's placement goes with it (SPEC §13): deleted if it still names `set` (one
   * transaction). `stillHere` is asked afterwards: a send that made the queue again meanwhile
   * gets the placement back (create-if-absent), so the queue is not left without its set.
   */
  async forget(queue: string, set: string, stillHere: () => boolean): Promise<void> {
    const key = `${this.#prefix}${queue}`;
    const current = this.#map.get(queue);
    if (!current || current.set !== set || current.move) return;
    if (this.#raw.get(queue) !== JSON.stringify({ set })) return;
    await withTimeout(this.#client.if(key, 'Value', '==', JSON.stringify({ set })).then(this.#client.delete().key(key)).commit(), this.#timeoutMs);
    this.#deleted(queue);
    if (stillHere()) await this.#create(queue, set);
  }

  /** the value etcd holds for `queue` now (not the cached one): null when not placed */
  async read(queue: string): Promise<{ raw: string; placement: Placement | null } | null> {
    const value = await withTimeout(this.#client.get(`${this.#prefix}${queue}`).string(), this.#timeoutMs);
    return value === null ? null : { raw: value, placement: decodePlacement(value) };
  }

  /** the raw value cached for `queue` (the one a compare-and-put compares with) */
  raw(queue: string): string | undefined {
    return this.#raw.get(queue);
  }

  /** writes `placement` if etcd still holds `expected` for `queue` (one transaction); false when it did not */
  async compareAndPut(queue: string, expected: string, placement: Placement): Promise<boolean> {
    const key = `${this.#prefix}${queue}`;
    const value = JSON.stringify(placement);
    const answer = await withTimeout(this.#client.if(key, 'Value', '==', expected).then(this.#client.put(key).value(value)).commit(), this.#timeoutMs);
    if (answer.succeeded) this.#put(queue, value);
    return answer.succeeded;
  }

  async #create(queue: string, set: string): Promise<string> {
    const key = `${this.#prefix}${queue}`;
    let answer;
    try {
      answer = await withTimeout(
        this.#client.if(key, 'Create', '==', 0).then(this.#client.put(key).value(JSON.stringify({ set }))).else(this.#client.get(key)).commit(),
        this.#timeoutMs,
      );
    } catch (error) {
      throw new WhiskerError('E_NO_PLACEMENT', 'Queue not placed yet and etcd did not answer', { queue, reason: (error as Error).message });
    }
    if (answer.succeeded) {
      this.#put(queue, JSON.stringify({ set }));
      return set;
    }
    const kv = answer.responses[0]?.response_range?.kvs[0];
    const placement = kv ? decodePlacement(kv.value.toString()) : null;
    if (!placement) throw new WhiskerError('E_NO_PLACEMENT', 'Queue placement unreadable', { queue });
    this.#put(queue, kv!.value.toString());
    return routeOf(placement);
  }

  #put(queue: string, value: string): void {
    const placement = decodePlacement(value);
    if (!placement) return;
    if (this.#raw.get(queue) === value) return;
    const before = this.#map.get(queue);
    this.#map.set(queue, placement);
    this.#raw.set(queue, value);
    if (!before || routeOf(before) !== routeOf(placement)) this.#events.placed(queue, routeOf(placement));
    this.#events.changed(queue, placement);
  }

  #deleted(queue: string): void {
    this.#raw.delete(queue);
    if (this.#map.delete(queue)) {
      this.#events.removed(queue);
      this.#events.changed(queue, undefined);
    }
  }
}
