import type { Logger } from '../../runtime/logger.js';
import type { StoredMessage } from '../store/store.js';
import { type CatchUpHold, NAMING_HOLD_MS } from './catch-up-hold.js';

/** a held copy as it leaves the hold: the message and the groups its master settled meanwhile */
export type Released = ReadonlyArray<{ message: StoredMessage; settled: readonly string[] }>;

/** what the catch-up needs of the router that owns it (router.ts) */
export interface CatchingUpEnv {
  readonly now: () => number;
  readonly log: Logger;
  readonly isMaster: () => boolean;
  /** `count` seqs set apart: returns the one before the first */
  readonly reserveSeqs: (count: number) => number;
  readonly nextSeq: () => number;
  /** a master's history: its clients' copies wait for its peers' offers while it catches up (Router.#historyRole) */
  readonly historyAsMaster: () => void;
  /** a held copy enters its queue (false: settled for good meanwhile, already queued, or a move's aside); `feed`: named to followers */
  readonly queueHeld: (message: StoredMessage, settled: readonly string[], finished: string[], feed: boolean) => boolean;
  /** ids settled for good while they were held: remembered, not queued */
  readonly recordRemoved: (messageIds: readonly string[]) => void;
  /** the master named a client's copy a move holds aside (moving.ts `named`); `here`: after what it brought before it */
  readonly namedAside: (messageId: string, here: boolean) => void;
}

/**
 * A mirror catching up, or a slave in step waiting for its master to name its clients' copies:
 * when the copies the router held (catch-up-hold.ts, which owns them) leave the hold and enter
 * their queues. The router admits a copy into the hold; the mirror (mirror/replica.ts,
 * peer-link.ts, peers.ts, promotion-gate.ts) drives the rest through `router.catchUp`.
 */
export class CatchingUp {
  readonly #hold: CatchUpHold;
  readonly #env: CatchingUpEnv;

  constructor(hold: CatchUpHold, env: CatchingUpEnv) {
    this.#hold = hold;
    this.#env = env;
  }

  /**
   * This mirror is not in step with a master (it just started, or was fenced): from now on its
   * clients' copies wait out of the queues until `end`, what the catch-up brings (a sync's
   * messages, peers' offers) takes seqs before theirs (`seq`)
   */
  begin(): void {
    this.#hold.begin(this.#env.reserveSeqs, this.#env.now());
    if (this.#env.isMaster()) this.#env.historyAsMaster();
  }

  get active(): boolean {
    return this.#hold.active;
  }

  /** clients' copies wait out of the queues: catching up, or a slave in step until its master names each */
  get holdingCopies(): boolean {
    return this.#hold.holding;
  }

  /**
   * A slave in step with its master (`on`), from the end of its sync to the end of its link:
   * clients' copies wait for the master's feed to name them (catch-up-hold.ts). Off: what waits
   * is queued, as it arrived (unless a catch-up holds it still)
   */
  holdUntilNamed(on: boolean): void {
    this.#hold.naming = on && !this.#env.isMaster();
    if (!on && !this.#hold.active) this.releaseHeld('out of step with the master');
  }

  /** in step: copies the master has not named after NAMING_HOLD_MS are queued, as they arrived (it never took them) */
  releaseUnnamed(): number {
    if (this.#hold.size === 0) return 0;
    const released = this.#hold.takeOlder(this.#env.now() - NAMING_HOLD_MS);
    const queued = this.#queue(released);
    if (released.length > 0) this.#env.log.warn("clients' messages the master did not name are queued where they arrived", { messages: released.length, queued, afterMs: NAMING_HOLD_MS });
    return queued;
  }

  /** the master settled this held copy for good: it goes now (it is remembered, so it is not queued) */
  dropHeld(messageId: string): void {
    const held = this.#hold.take(messageId);
    if (held) this.#queue([held]);
  }

  /** everything held is queued now (a move freezes a queue, a promotion, out of step): the catch-up too ends */
  releaseHeld(reason: string): number {
    if (this.#hold.active) return this.end(reason);
    if (this.#hold.size === 0) return 0;
    return this.#queue(this.#hold.end());
  }

  /**
   * Promoted in step: what waited for the old master to name it is queued, as it arrived (not
   * named to followers: they sync with this master, or have their own copies, as for those a
   * slave queued on arrival before: named, a follower's history wrote 6 records twice,
   * history-pause.test). Promoted while catching up: mirror/promotion-gate.ts ends the hold.
   */
  promoted(): void {
    if (!this.#hold.naming) return;
    this.#hold.naming = false;
    if (!this.#hold.active) this.#queue(this.#hold.end(), false);
  }

  /** a seq for a message a master's sync or a peer's offer brings */
  seq(): number {
    return this.#hold.seq() ?? this.#env.nextSeq();
  }

  /** the clients' copies held (catching up, or waiting for the master to name them), in arrival order */
  heldCopies(): IterableIterator<StoredMessage> {
    return this.#hold.messages();
  }

  /** a client's copy held until the catch-up ends, if it is one */
  heldCopy(messageId: string): StoredMessage | undefined {
    return this.#hold.message(messageId);
  }

  /**
   * the master's sync or feed names this message: a held copy of it is queued in the master's
   * order (holding copies: mirror/replica.ts queues it by `queueNamedHeld`, in that order, a
   * copy aside too; else a copy aside is marked named here)
   */
  namedByMaster(messageId: string): void {
    this.#hold.named(messageId);
    if (!this.#hold.holding) this.#env.namedAside(messageId, false);
  }

  /** the master settled a held copy for `group`: applied when it is queued; false if it is not held */
  settleHeld(messageId: string, group: string): boolean {
    if (!this.#hold.has(messageId)) return false;
    this.#hold.settle(messageId, group);
    return true;
  }

  /**
   * A slave catching up: its master names a held copy among messages it brings (its sync or
   * feed): queued now, after those before it, in the master's order (atk27e E5: a copy re-sent
   * at the client's reconnection waited for the end of the catch-up while newer sends, which
   * reached this broker by the feed first, were queued: 436-578 OK sends out of order)
   */
  queueNamedHeld(messageId: string): void {
    const held = this.#hold.take(messageId);
    if (held) this.#queue([held]);
    // a copy a move holds aside (or put aside just now, its queue aside): released in this place
    this.#env.namedAside(messageId, true);
  }

  /**
   * The catch-up is done: the copies held enter their queues (`inStep`: a slave in step with its
   * master now, only those it named; the others wait for its feed to name them) (those the master
   * named first, in its order, then the others as they arrived; a move's aside first), what the
   * master settled of them meanwhile settled; one settled for good (the feed's `removed`) or
   * handed back meanwhile is not queued. Returns how many were queued.
   */
  end(reason: string, inStep = false): number {
    if (!this.#hold.active) return 0;
    const isMaster = this.#env.isMaster();
    const heldMs = this.#hold.heldForMs(this.#env.now());
    const stillHeld = this.#hold.size;
    const released = this.#hold.end(inStep && !isMaster);
    const queued = this.#queue(released);
    // a master's history no longer waits for offers: what it holds is written where it arrived
    if (isMaster) this.#env.historyAsMaster();
    if (stillHeld > 0) this.#env.log.info("clients' messages held while catching up are queued", { reason, messages: released.length, queued, heldMs, ...(this.#hold.naming ? { waitingForTheMaster: this.#hold.size } : {}) });
    return queued;
  }

  #queue(released: Released, feed = true): number {
    const finished: string[] = [];
    let queued = 0;
    for (const { message, settled } of released) if (this.#env.queueHeld(message, settled, finished, feed)) queued++;
    this.#env.recordRemoved(finished);
    return queued;
  }
}
