/** One connection not authenticated yet: a raw TCP socket, then a WebSocket in its handshake. */
export interface Stranger {
  readonly address: string;
  /** closes it to make room for a newer one */
  evict: () => void;
}

export interface StrangerLimits {
  readonly total: number;
  readonly perAddress: number;
}

/**
 * The budget of connections that have not authenticated yet (docs/security.md#limits), apart
 * from the slots of authenticated clients: in total and per source address. A newcomer past
 * either bound makes room by closing the oldest stranger (of its address first), so silent
 * sockets cannot keep a client that completes its handshake in milliseconds out. Pure: the
 * server owns the sockets.
 */
export class Strangers {
  /** insertion order is age: the first is the oldest */
  readonly #all = new Set<Stranger>();
  readonly #byAddress = new Map<string, Set<Stranger>>();

  get size(): number {
    return this.#all.size;
  }

  /** counts `stranger`, after evicting what it takes to stay within `limits` */
  admit(stranger: Stranger, limits: StrangerLimits): void {
    const mine = this.#byAddress.get(stranger.address);
    while (mine && mine.size >= limits.perAddress) this.#evict(first(mine)!);
    while (this.#all.size >= limits.total) this.#evict(first(this.#all)!);
    this.#all.add(stranger);
    const set = this.#byAddress.get(stranger.address);
    if (set) set.add(stranger);
    else this.#byAddress.set(stranger.address, new Set([stranger]));
  }

  /** authenticated or gone: no longer counted (idempotent) */
  settle(stranger: Stranger): void {
    if (!this.#all.delete(stranger)) return;
    const set = this.#byAddress.get(stranger.address)!;
    set.delete(stranger);
    if (set.size === 0) this.#byAddress.delete(stranger.address);
  }

  #evict(stranger: Stranger): void {
    this.settle(stranger);
    stranger.evict();
  }
}

function first<T>(set: Set<T>): T | undefined {
  for (const item of set) return item;
  return undefined;
}
