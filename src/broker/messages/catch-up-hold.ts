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
 */
export class CatchUpHold {
  #active = false;
  readonly #held = new Map<string, StoredMessage>();
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
  hold(message: StoredMessage): boolean {
    if (!this.#active) return false;
    this.#held.set(message.messageId, message);
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
    this.#named.delete(messageId);
    this.#settled.delete(messageId);
    this.#bytes -= message.json?.length ?? JSON.stringify(message.data ?? null).length;
    return { message, settled };
  }

  /** every held message, those the master named first in its order, the rest in the order stored, with what was settled of each; nothing held after */
  end(): Array<{ message: StoredMessage; settled: readonly string[] }> {
    const order = [...this.#named, ...[...this.#held.keys()].filter((messageId) => !this.#named.has(messageId))];
    const released = order.map((messageId) => this.#held.get(messageId)!).map((message) => ({ message, settled: this.#settled.get(message.messageId) ?? [] }));
    this.#active = false;
    this.#seqs = null;
    this.#held.clear();
    this.#named.clear();
    this.#settled.clear();
    this.#bytes = 0;
    return released;
  }
}
