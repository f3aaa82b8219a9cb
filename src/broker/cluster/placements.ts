import type { Etcd3 } from 'etcd3';
import { WhiskerError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/logger.js';
import { withTimeout } from '../mirror/election.js';
import { decodePlacement, type Placement } from './types.js';
import { WatchedPrefix } from './watched.js';

export interface PlacementEvents {
  placed(queue: string, set: string): void;
  removed(queue: string): void;
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
    if (known) return Promise.resolve(known.set);
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
    await withTimeout(this.#client.if(key, 'Value', '==', JSON.stringify({ set })).then(this.#client.delete().key(key)).commit(), this.#timeoutMs);
    this.#deleted(queue);
    if (stillHere()) await this.#create(queue, set);
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
    return placement.set;
  }

  #put(queue: string, value: string): void {
    const placement = decodePlacement(value);
    if (!placement) return;
    const before = this.#map.get(queue);
    if (before && before.set === placement.set && before.move?.phase === placement.move?.phase) return;
    this.#map.set(queue, placement);
    this.#events.placed(queue, placement.set);
  }

  #deleted(queue: string): void {
    if (this.#map.delete(queue)) this.#events.removed(queue);
  }
}
