import type { Logger } from '../../runtime/logger.js';

/** the longest a master elected while catching up waits for its peers' offers (docs/operations.md#catching-up) */
export const OFFER_WAIT_MS = 5_000;

/**
 * Issue 27, B3: a master elected (or configured) while it was catching up (just started, or
 * fenced, then elected again after a window without a master) lacks the sends its peers stored
 * meanwhile (answered E_NO_MASTER with `storedBy`); each peer offers them once its sync with it
 * is done, then says its offer ended (`offer` with `last`). Its clients' copies stored meanwhile
 * wait out of its queues (messages/catch-up-hold.ts) until each peer it awaits has ended its
 * offer, or its link went down, or OFFER_WAIT_MS passed; then they are queued after the offers.
 * Their answers do not wait (they are stored); deliveries of what is queued go on. The bound
 * counts the time it was master over the elections of one catch-up: a master fenced and elected
 * again every 2-3 s (etcd starved) began it again at each election and held its clients' copies
 * 49.9 s (run j-w30-1 of atk27i's i2 scenario).
 */
export class PromotionGate {
  readonly #log: Logger;
  readonly #open: (reason: string) => void;
  #awaited = new Set<string>();
  #timer: NodeJS.Timeout | null = null;
  #since = 0;
  /** ms this broker was master, holding, in earlier elections of this catch-up */
  #spent = 0;

  /** `open`: the catch-up is done (the clients' copies held are queued) */
  constructor(log: Logger, open: (reason: string) => void) {
    this.#log = log;
    this.#open = open;
  }

  /** master while catching up: the clients' copies wait for these peers' offers (none: they do not wait) */
  hold(peers: Iterable<string>): void {
    this.#awaited = new Set(peers);
    if (this.#awaited.size === 0) return this.release('no peer to wait for');
    this.#since = performance.now();
    if (this.#timer) clearTimeout(this.#timer);
    const left = Math.max(0, OFFER_WAIT_MS - this.#spent);
    this.#timer = setTimeout(() => this.release(`not every peer ended its offer within ${OFFER_WAIT_MS} ms as master (waiting for ${[...this.#awaited].join(', ')})`, true), left);
    this.#timer.unref();
    this.#log.info("master while catching up: clients' messages stored meanwhile wait for the peers' offers", { peers: [...this.#awaited], boundMs: OFFER_WAIT_MS, leftMs: Math.round(left) });
  }

  /** this peer ended its offer (stored here), or cannot make one now (its link is down) */
  done(peer: string): void {
    if (!this.#timer || !this.#awaited.delete(peer)) return;
    if (this.#awaited.size === 0) this.release('every awaited peer ended its offer');
  }

  /** no longer master: the catch-up goes on (a sync, or elected again), nothing is released */
  cancel(): void {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#spent += performance.now() - this.#since;
    }
    this.#timer = null;
    this.#awaited.clear();
  }

  /** a new catch-up begins (the last one ended): its elections wait the whole bound again */
  reset(): void {
    this.#spent = 0;
  }

  /** `early`: a bound ended the wait, an offer may come after them (a warn line) */
  release(reason: string, early = false): void {
    const waited = this.#timer ? Math.round(this.#spent + performance.now() - this.#since) : 0;
    this.cancel();
    this.#spent = 0;
    if (early) this.#log.warn("clients' messages no longer wait for the peers' offers", { reason, waitedMs: waited });
    this.#open(reason);
  }
}
