import type { Etcd3, ICompare, IRequestOp } from 'etcd3';
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

/** a queue this broker asked to place: written with others in one transaction */
interface Ask {
  readonly queue: string;
  readonly set: string;
  readonly limit: number;
  readonly resolve: (set: string) => void;
  readonly reject: (error: WhiskerError) => void;
}

/** placements written in one transaction: etcd takes at most 128 operations per list (`--max-txn-ops`) */
const BATCH = 100;
/** transactions one batch may try, each lost to another broker's placements, before E_NO_PLACEMENT */
const MAX_ATTEMPTS = 20;

/**
 * The placement map (SPEC §13): `<prefix>/placements/<endpoint/version>` → `{ set }`, written
 * once per queue by an etcd transaction that creates the key only if absent (two brokers racing
 * read back the one that won), cached here from a watch.
 *
 * Bounded by `limits.maxPlacements` with etcd the authority, not this broker's cache (attacks-31
 * 5: two brokers placing at once each went the whole bound past it): every transaction that
 * creates or deletes a placement also writes `<prefix>/placements-changed`, so "that key has not
 * changed since revision R" means "the count read at R still holds". A placement is created only
 * in a transaction comparing that (and that its key is absent) with the count read at R plus
 * what it creates within the bound; lost to another broker, it reads the count and the keys
 * again (in the same transaction's else branch) and tries again. Asks are written 100 at a time.
 */
export class Placements {
  readonly #client: Etcd3;
  readonly #prefix: string;
  /** written by every transaction that creates or deletes a placement: its revision guards the count */
  readonly #changedKey: string;
  readonly #timeoutMs: number;
  /** asks waiting for the next transaction */
  #asks: Ask[] = [];
  #writing = false;
  /** placements in etcd as of `#countRevision` (null: not read yet, or a write's outcome unknown) */
  #count: number | null = null;
  #countRevision = 0;
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
    this.#changedKey = `${prefix}/placements-changed`;
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

  /** resolves once the map was read (every placement then known) */
  whenLoaded(): Promise<void> {
    return this.#whenLoaded;
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
   * of `choice()`. E_LIMIT when etcd holds `limit` placements already (not this queue's);
   * E_NO_PLACEMENT when etcd does not answer in time, the map was never read, or no set is live.
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
    const set = choice();
    if (!set) return Promise.reject(new WhiskerError('E_NO_PLACEMENT', 'Queue not placed yet and no set of the cluster is live', { queue }));
    const placing = new Promise<string>((resolve, reject) => {
      this.#asks.push({ queue, set, limit, resolve, reject });
      if (!this.#writing) void this.#write();
    }).finally(() => this.#placing.delete(queue));
    this.#placing.set(queue, placing);
    return placing;
  }

  /** one transaction at a time, each for up to BATCH asks: what came meanwhile goes in the next */
  async #write(): Promise<void> {
    this.#writing = true;
    try {
      while (this.#asks.length > 0) await this.#writeBatch(this.#asks.splice(0, BATCH));
    } finally {
      this.#writing = false;
    }
  }

  async #writeBatch(batch: Ask[]): Promise<void> {
    let asks = batch;
    for (let attempt = 0; asks.length > 0; attempt++) {
      if (attempt === MAX_ATTEMPTS) {
        for (const ask of asks) ask.reject(new WhiskerError('E_NO_PLACEMENT', 'Queue not placed: other brokers kept placing queues meanwhile; try again', { queue: ask.queue }));
        return;
      }
      const limit = Math.min(...asks.map((ask) => ask.limit));
      const room = this.#count === null ? 0 : Math.max(0, limit - this.#count);
      const admitted = asks.slice(0, room);
      const keys = asks.map((ask) => Buffer.from(`${this.#prefix}${ask.queue}`));
      // the count read at #countRevision still holds, and none of these queues is placed;
      // `Mod < 0` never holds: the count is read first (in the else branch)
      const compare: ICompare[] = [
        { key: Buffer.from(this.#changedKey), target: 'Mod', result: 'Less', mod_revision: this.#count === null ? 0 : this.#countRevision + 1 },
        ...keys.map((key): ICompare => ({ key, target: 'Create', result: 'Equal', create_revision: 0 })),
      ];
      const success: IRequestOp[] = admitted.length === 0 ? [] : [
        { request_put: { key: Buffer.from(this.#changedKey), value: Buffer.from('placed') } },
        ...admitted.map((ask, i): IRequestOp => ({ request_put: { key: keys[i]!, value: Buffer.from(JSON.stringify({ set: ask.set })) } })),
      ];
      const failure: IRequestOp[] = [
        { request_range: { key: Buffer.from(this.#prefix), range_end: prefixEnd(this.#prefix), count_only: true } },
        ...keys.map((key): IRequestOp => ({ request_range: { key } })),
      ];
      let answer;
      try {
        answer = await withTimeout(this.#client.kv.txn({ compare, success, failure }), this.#timeoutMs);
      } catch (error) {
        this.#count = null; // written or not: read again next time
        for (const ask of asks) ask.reject(new WhiskerError('E_NO_PLACEMENT', 'Queue not placed yet and etcd did not answer', { queue: ask.queue, reason: (error as Error).message }));
        return;
      }
      const revision = Number(answer.header.revision);
      if (answer.succeeded) {
        if (admitted.length > 0) {
          this.#count! += admitted.length;
          this.#countRevision = revision;
        }
        admitted.forEach((ask) => (this.#put(ask.queue, JSON.stringify({ set: ask.set })), ask.resolve(ask.set)));
        for (const ask of asks.slice(admitted.length)) ask.reject(new WhiskerError('E_LIMIT', `Too many placements (limit ${ask.limit})`, { queue: ask.queue }));
        return;
      }
      this.#count = Number(answer.responses[0]!.response_range.count);
      this.#countRevision = revision;
      const left: Ask[] = [];
      asks.forEach((ask, i) => {
        const kv = answer.responses[i + 1]?.response_range.kvs[0];
        if (!kv) return void left.push(ask);
        // placed meanwhile (by another broker, or a send that came first): the set etcd holds
        const value = kv.value.toString();
        const placement = decodePlacement(value);
        if (!placement) return ask.reject(new WhiskerError('E_NO_PLACEMENT', 'Queue placement unreadable', { queue: ask.queue }));
        this.#put(ask.queue, value);
        ask.resolve(routeOf(placement));
      });
      asks = left;
    }
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
    await withTimeout(this.#client.if(key, 'Value', '==', JSON.stringify({ set })).then(this.#client.delete().key(key), this.#client.put(this.#changedKey).value('deleted')).commit(), this.#timeoutMs);
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

  /**
   * A queue forgotten as its placement was deleted, made again meanwhile: placed back on its set
   * whatever the bound (it held a place a moment ago).
   */
  async #create(queue: string, set: string): Promise<string> {
    const key = `${this.#prefix}${queue}`;
    let answer;
    try {
      answer = await withTimeout(
        this.#client.if(key, 'Create', '==', 0).then(this.#client.put(key).value(JSON.stringify({ set })), this.#client.put(this.#changedKey).value('placed')).else(this.#client.get(key)).commit(),
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

/** the end of etcd's range of keys that start with `prefix` (the prefix with its last byte + 1) */
function prefixEnd(prefix: string): Buffer {
  const end = Buffer.from(prefix);
  end[end.length - 1]! += 1;
  return end;
}
