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
 * from the slots of authenticated clients. Below the total every newcomer is counted: many
 * clients behind one address may handshake at once. At the total, a newcomer makes room by
 * closing the oldest stranger of the address holding the most past its share (perAddress), else
 * the oldest of all: silent sockets cannot keep out a client that completes its handshake in
 * milliseconds, and one address cannot push out the others. Pure: the server owns the sockets.
 */
export class Strangers {
  /** insertion order is age: the first is the oldest */
  readonly #all = new Set<Stranger>();
  readonly #byAddress = new Map<string, Set<Stranger>>();
  /** addresses that held more than their share when they last grew: the only candidates to scan */
  readonly #crowded = new Set<string>();

  get size(): number {
    return this.#all.size;
  }

  /** counts `stranger`, after evicting what it takes to stay within `limits` */
  admit(stranger: Stranger, limits: StrangerLimits): void {
    while (this.#all.size >= limits.total) this.#evict(this.#victim(limits.perAddress));
    this.#all.add(stranger);
    let set = this.#byAddress.get(stranger.address);
    if (set) set.add(stranger);
    else this.#byAddress.set(stranger.address, (set = new Set([stranger])));
    if (set.size > limits.perAddress) this.#crowded.add(stranger.address);
  }

  /** authenticated or gone: no longer counted (idempotent) */
  settle(stranger: Stranger): void {
    if (!this.#all.delete(stranger)) return;
    const set = this.#byAddress.get(stranger.address)!;
    set.delete(stranger);
    if (set.size > 0) return;
    this.#byAddress.delete(stranger.address);
    this.#crowded.delete(stranger.address);
  }

  /** the oldest stranger of the address most past its share, else the oldest of all */
  #victim(perAddress: number): Stranger {
    let most: Set<Stranger> | undefined;
    for (const address of this.#crowded) {
      const set = this.#byAddress.get(address);
      if (!set || set.size <= perAddress) this.#crowded.delete(address);
      else if (!most || set.size > most.size) most = set;
    }
    return first(most ?? this.#all)!;
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
