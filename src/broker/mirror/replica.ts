import type { FollowHistory, HistoryFrame, PeerMessage, PeerReservation, PeerSettlement, ReservationsFrame } from '../../protocol/frames.js';
import type { Router } from '../messages/router.js';
import { makeStoredMessage, type StoredMessage } from '../store/store.js';
import { type HistoryPlan, HistoryStream } from './history-stream.js';
import type { InStepLog } from './in-step-log.js';
import { Unconfirmed, UNCONFIRMED_AFTER_MS } from './unconfirmed.js';

/** how far two mirrors' clocks may disagree on when a message was accepted */
const CLOCK_MARGIN_MS = 10_000;
/**
 * A master stores a peer's offer in appends of this many messages at most: each is admitted in
 * its own turn of the event loop once a turn's share is used (messages/appends.ts ADMIT_PER_TURN),
 * so thousands offered at once are not one long turn (atk27f F2: leaseTtl 2, fenced as it took them)
 */
const OFFER_APPEND = 250;
/**
 * A slave that stops following (its link to the master ended, or it just started) keeps leaving
 * ttl and drop-oldest to the master this long: a link back within it finds every delivery the
 * master holds in flight still here (a sync adds none it knows as expired: issue 27, atk27)
 */
export const FOLLOW_GRACE_MS = 2_000;
/**
 * A client's message accepted while in step with a master, and in step this long after, reached
 * that master: its feed named it, or the routine offer of unconfirmed copies (after
 * UNCONFIRMED_AFTER_MS, checked once a second) handed it over, and the master had time to store
 * it (a sync does not name a message the master is still writing) under a heavy load. Longer
 * costs nothing while dedupeWindow is longer than this plus CLOCK_MARGIN_MS: a message accepted
 * this close to the end of an interval is then still in the window at a quick restart's sync,
 * where the master's own dedupe answers it.
 */
export const IN_STEP_PROOF_MS = UNCONFIRMED_AFTER_MS + 8_000;

export function toPeerMessage(m: StoredMessage): PeerMessage {
  return { messageId: m.messageId, queue: m.queue, id: m.id, data: m.data, created: m.created, acceptedAt: m.acceptedAt, from: m.from };
}

/**
 * The messages a sync hands a follower: each queue's rows held when it began, read a part at a
 * time from the queue's ring (no id or object per waiting message is kept for the sync: issue
 * 30). A message settled since is left out (its removal follows in the feed), one accepted since
 * is not reached (the feed carries it).
 */
export interface HeldMessages {
  /** messages held when the snapshot was taken */
  readonly length: number;
  /** the next messages of the snapshot still held, in order, at most `limit`; empty at the end */
  next(limit: number): StoredMessage[];
}

/**
 * This broker's messages as mirrors see them (SPEC §9, docs/protocol.md#peers): what a master
 * hands a follower (snapshot, bodies), what a slave applies of its master (messages and
 * settlements), and what a slave holds that its master never named (offers).
 *
 * Why this file is long: both directions of one mirror's state (a master's snapshot and bodies,
 * a slave's apply of sync, feed and history frames, its offers and what it may forget) share
 * the router's view of the same messages; the order of an apply is kept in one place.
 */
export class Replica {
  readonly #router: Router;
  /** on a slave in step with its master: client messages the master has not named yet */
  readonly #unconfirmed = new Unconfirmed();
  /** ids of messages held here whose records a history catch-up brought (heldOnlyHere); at most what is held */
  readonly #brought = new Set<string>();
  #followingLinks = 0;
  #followGeneration = 0;
  #grace: NodeJS.Timeout | null = null;
  /** when this broker was in step with a master, across restarts (none: nothing is settled by a sync) */
  readonly #inStepLog: InStepLog | null;

  /** `presumeFollowing`: a broker with peers starts as if it followed (router.setFollowsMaster(true) before its restore) */
  constructor(router: Router, presumeFollowing = false, inStepLog: InStepLog | null = null) {
    this.#router = router;
    this.#inStepLog = inStepLog;
    if (presumeFollowing) this.#startGrace();
  }

  /** no timer left behind at stop (the in-step interval ends too) */
  close(): void {
    this.#stopGrace();
    this.#inStepLog?.close();
  }

  #stopGrace(): void {
    if (this.#grace) clearTimeout(this.#grace);
    this.#grace = null;
  }

  #startGrace(): void {
    if (this.#grace) return;
    this.#grace = setTimeout(() => {
      this.#grace = null;
      if (this.#followingLinks === 0) this.#router.setFollowsMaster(false);
    }, FOLLOW_GRACE_MS);
    this.#grace.unref();
  }

  get isMaster(): boolean {
    return this.#router.isMaster;
  }

  /** counts the follows of a master this broker started: another one breaks a fenced master's kept feed (mirror/feed.ts) */
  get followGeneration(): number {
    return this.#followGeneration;
  }

  // ---- a master's side ------------------------------------------------------------------

  /**
   * What a mirror that follows this master needs first: what is held, and what was settled.
   * Bodies left on disk are read with `withBodies`, a chunk at a time.
   */
  snapshot(): { messages: HeldMessages; removed: string[] } {
    const router = this.#router;
    // where each queue's ring ends now: rows past it came after the snapshot
    const parts = [...router.queues.values()].map((queue) => ({ queue, at: queue.ring.head, end: queue.ring.tail }));
    let length = 0;
    for (const { queue } of parts) length += queue.size;
    const messages: HeldMessages = {
      length,
      next: (limit) => {
        const part: StoredMessage[] = [];
        while (parts.length > 0 && part.length < limit) {
          const first = parts[0]!;
          first.at = first.queue.heldPart(first.at, first.end, limit - part.length, part);
          if (first.at >= first.end) parts.shift();
        }
        return part;
      },
    };
    const removed: string[] = [];
    for (const messageId of router.recentIds()) if (!router.holding(messageId)) removed.push(messageId);
    return { messages, removed };
  }

  /** null, or settles once this broker's history has written what its last role change holds (a catch-up view waits for it) */
  historySettled(): Promise<void> | null {
    return this.#router.history?.roleSettled() ?? null;
  }

  /**
   * What a follower's history catch-up reads: every retained channel as it is now, less the
   * messages still being written (their feed frame names them: docs/protocol.md#history-catch-up)
   */
  historyPlan(history: readonly FollowHistory[]): HistoryPlan {
    const views = this.#router.history?.views() ?? [];
    return HistoryStream.plan(views, views.length > 0 ? this.#router.appendsUnderWay() : new Set(), history);
  }

  /** the reserved ids a follower gets first (SPEC §5) */
  reservations(): PeerReservation[] {
    return this.#router.reservations.list();
  }

  /**
   * The messages as a mirror gets them, bodies read back from the store where a queue left them
   * on disk; one settled meanwhile is left out (its removal follows in the feed).
   */
  async withBodies(messages: readonly StoredMessage[]): Promise<PeerMessage[]> {
    const cold = messages.filter((m) => m.data === undefined);
    const bodies = cold.length > 0 ? await this.#router.readBodies(cold.map((m) => m.messageId)) : [];
    const read = new Map(cold.map((m, i) => [m, bodies[i]]));
    const peerMessages: PeerMessage[] = [];
    for (const m of messages) {
      const data = m.data ?? read.get(m);
      if (data !== undefined) peerMessages.push({ ...toPeerMessage(m), data });
    }
    return peerMessages;
  }

  // ---- catching up (messages/catch-up-hold.ts) ------------------------------------------

  /** not in step with a master (started, or fenced): clients' copies wait until the catch-up is done */
  beginCatchUp = (): void => this.#router.catchUp.begin();
  get catchingUp(): boolean {
    return this.#router.catchUp.active;
  }
  /** in step with a master, or elected and its peers' offers in: the clients' copies held are queued */
  endCatchUp = (reason: string, inStep = false): number => this.#router.catchUp.end(reason, inStep);

  // ---- a slave's side -------------------------------------------------------------------

  /** not in step with a master: this broker's own history writes go aside until its catch-up */
  async historyOutOfStep(): Promise<void> {
    await this.#router.history?.outOfStep();
  }

  /**
   * In step (the sync is done): the writes set aside join the history, after the catch-up; from
   * now on the history takes the master's feed order (clients' copies wait for the feed to place them)
   */
  async historyInStep(): Promise<void> {
    await this.#router.history?.inStep(!this.#router.isMaster);
  }

  /** per retained channel, the ids of its newest records from before this broker fell out of step */
  async historyAnchors(count: number): Promise<FollowHistory[]> {
    return (await this.#router.history?.anchors(count)) ?? [];
  }

  /** a master's feed during its sync: the history of those messages follows the catch-up */
  async historyFromFeed(messages: readonly PeerMessage[]): Promise<void> {
    await this.#router.history?.catchUpFeed(messages);
  }

  /** a master's `history` frame: written before this broker's own writes since it fell out of step */
  async applyHistory(frame: HistoryFrame): Promise<void> {
    const router = this.#router;
    // the master accepted these: one held here that its sync does not name, it settled (heldOnlyHere)
    for (const record of frame.records) if (router.catchUp.heldCopy(record.messageId) || router.holding(record.messageId)) this.#brought.add(record.messageId);
    const history = router.history;
    if (!history) return;
    if (frame.after !== undefined) await history.catchUpBegin(frame.queue, frame.after);
    if (frame.records.length > 0) await history.catchUpWrite(frame.queue, frame.records);
    if (frame.last) await history.catchUpEnd(frame.queue);
  }

  /** messages a master holds (or a follower offered): stored and queued here unless already known */
  async applyMessages(messages: readonly PeerMessage[]): Promise<void> {
    const router = this.#router;
    const seen = new Set<string>();
    // a slave catching up: the clients' copies it holds that the master names here are queued
    // in its order, among the messages it brings (`steps`: runs of those, and held ids)
    const inOrder = !router.isMaster && router.catchUp.holdingCopies;
    const steps: Array<StoredMessage[] | string> = [];
    for (const m of messages) {
      this.#unconfirmed.confirm(m.messageId);
      if (!router.isMaster) router.catchUp.namedByMaster(m.messageId);
      if (inOrder && !seen.has(m.messageId) && (router.catchUp.heldCopy(m.messageId) || router.appendUnderWay(m.messageId) || router.moving.awaitsNaming(m.messageId))) {
        seen.add(m.messageId);
        steps.push(m.messageId);
        continue;
      }
      if (seen.has(m.messageId) || router.isKnown(m.messageId) || router.appendUnderWay(m.messageId) || router.holding(m.messageId)) continue;
      seen.add(m.messageId);
      // before the clients' copies held while catching up (a restart gives them back in that order)
      const message = makeStoredMessage(router.catchUp.seq(), m);
      const last = steps.at(-1);
      if (typeof last === 'object') last.push(message);
      else steps.push([message]);
    }
    // a master taking a peer's offer: in smaller appends (a slave's steps stay whole: one write per feed batch)
    if (router.isMaster) splitRuns(steps, OFFER_APPEND);
    // a slave in step: the history in the feed's order, clients' copies held until now included
    const history = router.history;
    const placing = history?.placing === true;
    const storing = this.#storeInOrder(steps, placing);
    if (history && placing) {
      // a master catching up (peers' offers): its clients' copies held keep their place, after these
      const stored = new Set(steps.flatMap((step) => (typeof step === 'string' ? [] : step.map((m) => m.messageId))));
      const placed = router.isMaster ? messages.filter((m) => stored.has(m.messageId)) : messages;
      const written = history.place(placed, (messageId) => stored.has(messageId));
      await Promise.all([written, storing]);
      return;
    }
    await storing;
  }

  /**
   * Runs of messages stored and queued, each held copy named after them queued then, in the
   * order of the appends: all of them begin now (a client's copy of one arriving meanwhile waits
   * for it: stored later, it was written twice in the history, history-pause.test)
   */
  #storeInOrder(steps: ReadonlyArray<StoredMessage[] | string>, placed: boolean): Promise<unknown> {
    const router = this.#router;
    return Promise.all(steps.map((step) => (typeof step === 'string' ? router.afterAdmitted(() => router.catchUp.queueNamedHeld(step)) : router.store(step, false, placed))));
  }

  /** the master's settlements: the same records are settled here */
  applySettled(settled: readonly PeerSettlement[], removed: readonly string[]): void {
    const router = this.#router;
    for (const { messageId, group } of settled) {
      this.#unconfirmed.confirm(messageId);
      const queue = router.holding(messageId);
      if (queue) queue.settleFromPeer(messageId, group);
      else if (!router.catchUp.settleHeld(messageId, group)) {
        // stored meanwhile: queued, or held while this mirror catches up (settled when queued)
        router.whenStored(messageId, () => {
          const stored = router.holding(messageId);
          if (stored) stored.settleFromPeer(messageId, group);
          else router.catchUp.settleHeld(messageId, group);
        });
      }
    }
    for (const messageId of removed) {
      this.#unconfirmed.confirm(messageId);
      const queue = router.holding(messageId);
      if (queue) queue.forgetFromPeer(messageId);
      // a copy still on its way from the client, or being stored, is then not queued (SPEC §7);
      // one held for the master to name it goes now (else it waited up to NAMING_HOLD_MS)
      else {
        router.remember(messageId);
        router.catchUp.dropHeld(messageId);
      }
    }
  }

  /** the master's reserved ids: this broker refuses by them, and keeps them if it is promoted */
  applyReservations(frame: ReservationsFrame): void {
    this.#router.reservations.applyFromMaster(frame.full, frame.set, frame.released);
  }

  /** a client's message stored here while a master is followed: the master should name it */
  storedFromClient(message: StoredMessage): void {
    this.#unconfirmed.stored(message.messageId, message.acceptedAt);
  }

  /**
   * A link starts or stops following a master (from the `follow` asked of it): while one does,
   * its settlements bound the queues here (two brokers both master: two links may follow)
   */
  followsMaster(follows: boolean): void {
    if (follows) this.#followGeneration++;
    this.#followingLinks = Math.max(0, this.#followingLinks + (follows ? 1 : -1));
    if (this.#followingLinks > 0) {
      this.#stopGrace();
      this.#router.setFollowsMaster(true);
    } else {
      this.#router.catchUp.holdUntilNamed(false);
      this.#startGrace();
    }
  }

  /** in step with a master: from now on its feed names every message it has */
  startTracking(master: string, epoch: number | undefined): void {
    this.#router.catchUp.holdUntilNamed(true);
    this.#unconfirmed.start();
    this.#inStepLog?.begin(master, epoch);
  }

  /** offered to the master after a sync: unconfirmed until its feed names them (offered again after UNCONFIRMED_AFTER_MS) */
  trackOffered(messageIds: readonly string[]): void {
    const now = this.#router.now();
    for (const messageId of messageIds) this.#unconfirmed.stored(messageId, now);
  }

  stopTracking(): void {
    this.#router.catchUp.holdUntilNamed(false);
    this.#unconfirmed.stop();
    this.#inStepLog?.end();
  }

  /**
   * The master we are in step with was fenced (mirror/peer-link.ts waits for it): clients'
   * copies are still tracked (offered once it is master again), but this is no stretch in step
   * with it: what is accepted meanwhile may never reach it (heldOnlyHere keeps it)
   */
  pauseInStep(): void {
    this.#inStepLog?.end();
  }

  /** in step again with the same master, its feed resumed: a new stretch in step */
  resumeInStep(master: string, epoch: number | undefined): void {
    this.#inStepLog?.begin(master, epoch);
  }

  /**
   * Messages held here that the master's sync did not name, accepted within the dedupe window
   * (less a margin for the two clocks): the master would remember settling any of those, so it
   * never had them (a send answered E_NO_MASTER, SPEC §3); they are offered. Older ones it may
   * have settled and forgotten: one accepted while this broker was in step with this master (or
   * one elected after it), and in step IN_STEP_PROOF_MS after, reached it, so the set settled it
   * (`settled`, forgotten here as the feed's `removed` would: issue 27, nemesis seed 27); the rest
   * stay here, counted in `older`. One past the window whose record the sync's history catch-up
   * brought, the master accepted and no longer holds: it settled it (a slave starved for minutes
   * at load read its clients' copies of sends its master had settled and forgotten, and offered
   * them as new: nemesis seed 27, 6,742 records twice in every history). Within the window, such
   * a message may be one a master catching up holds out of its queues (its feed names it later):
   * it is offered, and the master, which remembers it, does not take it twice.
   */
  async heldOnlyHere(named: ReadonlySet<string>, master: string, epoch: number | undefined): Promise<{ messages: PeerMessage[]; older: number; settled: string[] }> {
    const router = this.#router;
    const acceptedSince = router.now() - router.dedupeWindowMs + CLOCK_MARGIN_MS;
    const messages: StoredMessage[] = [];
    const settled: string[] = [];
    let older = 0;
    const brought = this.#brought;
    for (const queue of router.queues.values()) {
      for (const m of queue.heldMessages()) {
        if (named.has(m.messageId)) continue;
        if (m.acceptedAt >= acceptedSince) messages.push(m);
        else if (brought.has(m.messageId)) settled.push(m.messageId);
        else if (this.#inStepLog?.covers(m.acceptedAt, m.acceptedAt + IN_STEP_PROOF_MS, master, epoch)) settled.push(m.messageId);
        else older++;
      }
    }
    // then the clients' copies waiting for the master to name them: the newest (a master catching
    // up queues an offer in its order; offered first, a restarted slave's copies since its start
    // went before sends it had queued: atk31h calloff-a-down run13, 10 listener breaks). One
    // accepted in step with this master past the window (a restart's copy a move kept aside) it settled
    for (const m of router.catchUp.heldCopies()) {
      if (named.has(m.messageId)) continue;
      if (m.acceptedAt < acceptedSince && (brought.has(m.messageId) || this.#inStepLog?.covers(m.acceptedAt, m.acceptedAt + IN_STEP_PROOF_MS, master, epoch))) settled.push(m.messageId);
      else messages.push(m);
    }
    this.#brought.clear();
    return { messages: await this.withBodies(messages), older, settled };
  }

  /** messages a sync showed the set settled (heldOnlyHere): forgotten here, the removal stored */
  forgetSettled(messageIds: readonly string[]): void {
    this.applySettled([], messageIds);
  }

  /** client messages the master has not named within `ageMs`: it never got them (we offer them) */
  async takeUnconfirmed(ageMs: number): Promise<PeerMessage[]> {
    this.#router.catchUp.releaseUnnamed();
    const ids = this.#unconfirmed.takeStoredBefore(this.#router.now() - ageMs);
    if (ids.size === 0) return [];
    const messages: StoredMessage[] = [];
    for (const messageId of ids) {
      const message = this.#router.holding(messageId)?.message(messageId) ?? this.#router.catchUp.heldCopy(messageId);
      if (message) messages.push(message);
    }
    return this.withBodies(messages);
  }
}

/** the runs of messages in `steps` cut into runs of at most `size`, in place and in order */
function splitRuns(steps: Array<StoredMessage[] | string>, size: number): void {
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i]!;
    if (typeof step === 'string' || step.length <= size) continue;
    const parts: StoredMessage[][] = [];
    for (let at = 0; at < step.length; at += size) parts.push(step.slice(at, at + size));
    steps.splice(i, 1, ...parts);
    i += parts.length - 1;
  }
}
