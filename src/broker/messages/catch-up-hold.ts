import type { StoredMessage } from '../store/store.js';

/**
 * Clients' messages one broker holds at most out of its queues while it catches up (docs/security.md#limits):
 * past it they are queued where they arrived, and nothing more is held until the next catch-up
 */
export const CATCH_UP_HOLD_MAX = 200_000;
/** ... and at most this many bytes of their bodies (as JSON), all queues together */
export const CATCH_UP_HOLD_MAX_BYTES = 64 * 1_048_576;
/** seqs set apart for what a catch-up brings (a sync's messages, peers' offers): their order after a restart */
const CATCH_UP_SEQS = 1 << 22;
/** a slave in step: a client's copy its master has not named after this long (it never took it) is queued where it arrived */
export const NAMING_HOLD_MS = 30_000;

/**
 * Issue 27, B3: a broker of a mirror set that was not in step with a master (just started, or a
 * master fenced) lacks what the set took meanwhile; a master's sync or its peers' offers bring
 * it later. Clients' copies it stores meanwhile are newer than those, so they wait here, stored
 * but not queued, until the catch-up is done (in step with a master: mirror/peer-link.ts; or
 * elected, once its peers ended their offers: mirror/promotion-gate.ts); then they enter their
 * queues in the order they arrived, after what the catch-up brought. Queued as they arrived, they
 * were first delivered, replayed and handed over before older sends of the same connections.
 *
 * What the catch-up brings takes seqs from a range set apart when the hold began, before those of
 * the copies held: a restart loads both in the same order (the store gives seq order).
 * The one owner of that state; the router asks it where a client's copy goes.
 *
 * In step, a slave goes on holding its clients' copies (`naming`) until its master's feed names
 * each one, which queues it there, in the master's order: a client whose link to this broker
 * came back later than its link to the master sends here directly what is newer than what the
 * master still has to feed us (atk27e E5: 45-165 sends out of order once this broker was
 * promoted). One the master has not named after NAMING_HOLD_MS is queued where it arrived.
 */
export class CatchUpHold {
  #active = false;
  /** a slave in step with its master: copies wait for its feed to name them */
  #naming = false;
  readonly #held = new Map<string, StoredMessage>();
  /** when each held copy was stored, in the same (arrival) order */
  readonly #at = new Map<string, number>();
  /**
   * held messages the master's sync or feed named, in the order it named them: they are queued
   * in that order, before those it did not name (a client's copies can reach a restarted broker
   * out of send order: one re-sent at its reconnection after a newer one, CI ci18: 1,753 after 1,756)
   */
  readonly #named = new Set<string>();
  /** per held message, what the master settled of it meanwhile: applied once it is queued */
  readonly #settled = new Map<string, string[]>();
  #seqs: { next: number; end: number } | null = null;
  #since = 0;
  #bytes = 0;

  get active(): boolean {
    return this.#active;
  }

  /** clients' copies are held now: catching up, or in step waiting for the master to name them */
  get holding(): boolean {
    return this.#active || this.#naming;
  }

  get naming(): boolean {
    return this.#naming;
  }

  set naming(on: boolean) {
    this.#naming = on;
  }

  get size(): number {
    return this.#held.size;
  }

  /** ms since the hold began (0: none) */
  heldForMs(now: number): number {
    return this.#active ? now - this.#since : 0;
  }

  /** from now on clients' copies are held; `reserve(count)` sets seqs apart and returns the one before them */
  begin(reserve: (count: number) => number, now: number): void {
    if (this.#active) return;
    this.#active = true;
    this.#since = now;
    const before = reserve(CATCH_UP_SEQS);
    this.#seqs = { next: before + 1, end: before + CATCH_UP_SEQS };
  }

  /** a seq for a message the catch-up brings, or null (none held, or the range used up) */
  seq(): number | null {
    const seqs = this.#seqs;
    if (!this.#active || !seqs || seqs.next > seqs.end) return null;
    return seqs.next++;
  }

  /** a client's copy stored: held (true), or false when it goes to its queue now */
  hold(message: StoredMessage, now: number): boolean {
    if (!this.#active && !this.#naming) return false;
    this.#held.set(message.messageId, message);
    this.#at.set(message.messageId, now);
    this.#bytes += message.json?.length ?? JSON.stringify(message.data ?? null).length;
    return true;
  }

  /** past the bound: what is held goes to the queues now (the caller releases) */
  get full(): boolean {
    return this.#held.size >= CATCH_UP_HOLD_MAX || this.#bytes >= CATCH_UP_HOLD_MAX_BYTES;
  }

  has(messageId: string): boolean {
    return this.#held.has(messageId);
  }

  messages(): IterableIterator<StoredMessage> {
    return this.#held.values();
  }

  message(messageId: string): StoredMessage | undefined {
    return this.#held.get(messageId);
  }

  /** the master named this message (a sync or its feed): if held, it is queued in the master's order */
  named(messageId: string): void {
    if (this.#held.has(messageId)) this.#named.add(messageId);
  }

  /** the master settled this held message for `group`: applied once it is queued */
  settle(messageId: string, group: string): void {
    const groups = this.#settled.get(messageId);
    if (groups) groups.push(group);
    else this.#settled.set(messageId, [group]);
  }

  /** one held message, taken out of the hold (the master named it: queued now, in its order), with what was settled of it */
  take(messageId: string): { message: StoredMessage; settled: readonly string[] } | undefined {
    const message = this.#held.get(messageId);
    if (!message) return undefined;
    const settled = this.#settled.get(messageId) ?? [];
    this.#held.delete(messageId);
    this.#at.delete(messageId);
    this.#named.delete(messageId);
    this.#settled.delete(messageId);
    this.#bytes -= message.json?.length ?? JSON.stringify(message.data ?? null).length;
    return { message, settled };
  }

  /** in step, not catching up: the copies held since `since` (ms) or before, in arrival order, taken out */
  takeOlder(since: number): Array<{ message: StoredMessage; settled: readonly string[] }> {
    if (this.#active) return [];
    const ids: string[] = [];
    for (const [messageId, at] of this.#at) {
      if (at > since) break;
      ids.push(messageId);
    }
    return ids.map((messageId) => this.take(messageId)!);
  }

  /**
   * The catch-up ends. `inStep` (a slave in step now): those its master named are returned, in
   * its order; the others stay held until its feed names them (`naming` from now on). Otherwise
   * every held message is returned, those the master named first, in its order, the rest in the
   * order stored, with what was settled of each, and nothing is held after.
   */
  end(inStep = false): Array<{ message: StoredMessage; settled: readonly string[] }> {
    this.#active = false;
    this.#seqs = null;
    if (inStep) {
      this.#naming = true;
      return [...this.#named].map((messageId) => this.take(messageId)!);
    }
    const order = [...this.#named, ...[...this.#held.keys()].filter((messageId) => !this.#named.has(messageId))];
    const released = order.map((messageId) => this.#held.get(messageId)!).map((message) => ({ message, settled: this.#settled.get(message.messageId) ?? [] }));
    this.#held.clear();
    this.#at.clear();
    this.#named.clear();
    this.#settled.clear();
    this.#bytes = 0;
    return released;
  }
}
