import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Retention } from '../../config/types.js';
import type { Logger } from '../../runtime/logger.js';
import type { StoredMessage } from '../store/store.js';
import { ChannelHistory, type HistoryView, type ReadRange } from './channel-history.js';
import { HeldJournal, type Journaled } from './held-journal.js';
import { checkAtRestart } from './restart-check.js';
import type { HistoryRecord, ReadRecord } from './segment.js';

export type { HistoryRecord, ReadRecord } from './segment.js';
export type { HistoryView, ReadRange } from './channel-history.js';

/** how often retention by time is applied when nothing is appended */
const TRIM_INTERVAL_MS = 5_000;

/**
 * A slave in step holds the history records of clients' copies until its master's feed places
 * them (docs/operations.md#history-catch-up): at most this many bytes of them (docs/security.md#limits);
 * past it the oldest are written where they arrived
 */
export const HOLD_MAX_BYTES = 16 * 1_048_576;
/** a client's copy the feed has not placed after this long (the master never took it) is written where it arrived */
export const HOLD_MAX_MS = 30_000;

/**
 * ids a catch-up wrote (accepted within this long) are not written again by this broker's own
 * writes for this long: a master's feed may name them after its catch-up (`#caughtUp`)
 */
export const CAUGHT_UP_MS = 60_000;
/** at most this many such ids (the oldest go first): bounded memory */
const CAUGHT_UP_MAX = 200_000;

/** a client's copy waiting for the master's feed to place it */
interface Held {
  readonly queue: string;
  readonly record: HistoryRecord;
  readonly bytes: number;
  readonly at: number;
}

/** a message as a peer names it (protocol PeerMessage), what a history record is made of */
interface PeerMessageLike {
  readonly messageId: string;
  readonly queue: string;
  readonly id: string;
  readonly acceptedAt: number;
  readonly created: number;
  readonly from: string;
  readonly data: unknown;
}

export interface HistoryStats {
  readonly bytes: number;
  readonly count: number;
  /** acceptance time of the oldest message kept, ms epoch */
  readonly oldestAt: number | null;
}

/**
 * The history of every retained channel (`channels["ep/ver"].retention`, docs/configuration.md#retention),
 * in `dataDirectory/history/<endpoint>@<version>/`: every message accepted on such a channel,
 * kept after its acks until it is older than `seconds` or the channel is past `maxBytes`. Every
 * mirror stores the messages it holds, so a promoted mirror has the same history.
 *
 * Why this file is long: the one owner of every channel's history on a broker, and of the order
 * in which a slave writes it (clients' copies held until its master's feed places them, its own
 * records held again when it comes into step, a move's hand-over): split, those holds would be
 * state shared between files.
 */
export class History {
  readonly #dir: string;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #channels = new Map<string, ChannelHistory>();
  #retention: (queue: string) => Retention | null;
  #timer: NodeJS.Timeout | null = null;
  /**
   * ids found in a history at restart that its message log never took (a kill -9 between the two
   * writes): when the client sends them again they are accepted, and not written a second time
   */
  readonly #alreadyWritten = new Set<string>();
  /**
   * ids of recent records a master's catch-up wrote here, and when: not written again by this
   * broker's own writes (the feed's `place`, a client's copy) until CAUGHT_UP_MS later. A master
   * elected while catching up holds its clients' copies out of its queues while its history may
   * have them already (written where they arrived when it was fenced meanwhile): its catch-up
   * brings them, and its feed names them again when its hold ends (atk27g G4: 416 twice)
   */
  readonly #caughtUp = new Map<string, number>();
  /**
   * ids of the records `recover` found missing (the caller writes them at start, with this
   * broker's own writes): accepted before the stop, so not held again at its first join as if
   * they were recent clients' copies (atk31h: written after what peers offered or the feed
   * placed since, 60 records out of send order at the end of a replay)
   */
  #recovered = new Set<string>();
  /**
   * ids not held again at the next join as if recent clients' copies (held, they were written
   * last): a hand-over's records `adopt` wrote out of step (the old set's history, never named by
   * the master's feed: atk31j, 5,338 records out of order in a replay), and what a sync's feed
   * named that no catch-up took (`catchUpFeed`: the feed will not name them again)
   */
  #adoptedOutOfStep = new Set<string>();
  /** queues moving here (SPEC §13): their new records wait until the old set's history is written before them */
  readonly #moving = new Map<string, HistoryRecord[]>();
  /**
   * clients' copies a slave held for its master's feed when their queue began to wait
   * (`holdMoving`): sent before, so written where the feed places them, not after the hand-over
   */
  readonly #heldBeforeMoving = new Set<string>();
  /**
   * ids whose records a hand-over wrote (`adopt`) while their messages are not stored yet: a
   * follower's catch-up taken meanwhile leaves them out, as it does messages being appended (the
   * feed of its sync names them once stored). Until `stored`.
   */
  readonly #storedNext = new Set<string>();
  /** settles after every append so far: the next one resolves after it */
  #lastAppend: Promise<void> = Promise.resolve();
  /** this broker is out of step with a master: every channel writes to its side line (docs/operations.md#history-catch-up) */
  #outOfStep = false;
  /**
   * A slave in step with its master: the records of clients' copies wait in `#held` until the
   * master's feed names them, and are written then, in the feed's order (`place`)
   */
  #placing = false;
  /** joins of side lines under way (`inStep`), and when the last one asked settles */
  #joining = 0;
  #joined: Promise<void> = Promise.resolve();
  /** counts role changes asked: a stop of placing deferred behind a join is dropped if another came */
  #turn = 0;
  /** role changes (`inStep`, `outOfStep`) still writing what they hold or joining side lines */
  #changingRole = 0;
  /** settles after the last role change asked */
  #roleChanged: Promise<void> = Promise.resolve();
  /** replays on a master waiting for what it holds back to be written (`#whole`) */
  #wholeWaiters: Array<() => void> = [];
  /** clients' copies waiting for the feed, oldest first (insertion order) */
  readonly #held = new Map<string, Held>();
  #heldBytes = 0;
  /** every record held out of the channels' files (`#held`, `#moving`) is on disk here until they have it (atk27j F1) */
  readonly #journal: HeldJournal;
  readonly #fromJournal: Journaled[] = []; // what it held at open: `recover` writes back what the files lack
  /** replays served since start (metrics: whisker_replays_total) */
  replays = 0;
  /** replays reading now (whisker_replays_in_progress) */
  replaying = 0;
  /** messages given by replays since start (whisker_replayed_messages_total); the replay handler counts them */
  replayedMessages = 0;

  constructor(dir: string, retention: (queue: string) => Retention | null, log: Logger, now: () => number) {
    this.#dir = dir;
    this.#retention = retention;
    this.#log = log;
    this.#now = now;
    this.#journal = new HeldJournal(dir);
  }

  /** the channels with a history on disk come back (also those no longer retained: trimmed by a reload's rules) */
  async open(): Promise<void> {
    for (const entry of await this.#journal.open()) this.#fromJournal.push(entry);
    for (const name of await readdir(this.#dir).catch(() => [] as string[])) {
      const at = name.indexOf('@');
      if (at <= 0) continue;
      const channel = new ChannelHistory(join(this.#dir, name));
      await channel.open();
      this.#channels.set(`${name.slice(0, at)}/${name.slice(at + 1)}`, channel);
    }
    this.#timer = setInterval(() => void this.trimAll(), TRIM_INTERVAL_MS);
    this.#timer.unref();
  }

  /** at reload: the new config's retention applies from now on */
  setRetention(retention: (queue: string) => Retention | null): void {
    this.#retention = retention;
  }

  isRetained(queue: string): boolean {
    return this.#retention(queue) !== null;
  }

  /**
   * Stores the messages of retained channels; resolves once they are on disk, and never before
   * an earlier call's promise: the router admits in the order its appends resolve (issue 27).
   * `fromClient` on a slave in step: held until the master's feed places them (`place`); the
   * message log has them meanwhile, and the master's history (a send is answered OK once there).
   */
  append(messages: readonly StoredMessage[], fromClient = false): Promise<void> {
    if (fromClient && this.#placing) {
      // answered once journaled too (settled, they leave the log before the files may have them)
      const done = Promise.all([this.#hold(messages), this.#lastAppend]).then(() => undefined);
      this.#lastAppend = done.catch(() => undefined);
      return done;
    }
    return this.#write(messages);
  }

  /** writes the records of these messages (retained channels only) where each channel writes now */
  #write(messages: readonly PeerMessageLike[]): Promise<void> {
    let byQueue: Map<string, HistoryRecord[]> | null = null;
    // journaled records leaving memory: out once written; those a move holds now go in (`aside`)
    const journaling = this.#journal.size > 0;
    const out: string[] = [];
    let aside: Journaled[] | null = null;
    for (const m of messages) {
      const journaled = journaling && this.#journal.has(m.messageId);
      if (m.data === undefined || this.#retention(m.queue) === null || this.#alreadyWritten.delete(m.messageId) || this.#caughtUp.has(m.messageId)) {
        if (journaled) out.push(m.messageId);
        continue;
      }
      const record: HistoryRecord = { messageId: m.messageId, id: m.id, acceptedAt: m.acceptedAt, created: m.created, from: m.from, data: m.data };
      const moving = this.#heldBeforeMoving.delete(m.messageId) ? undefined : this.#moving.get(m.queue);
      if (moving) {
        moving.push(record);
        if (!journaled) (aside ??= []).push({ queue: m.queue, record });
        continue;
      }
      if (journaled) out.push(m.messageId);
      byQueue ??= new Map();
      let records = byQueue.get(m.queue);
      if (!records) byQueue.set(m.queue, (records = []));
      records.push(record);
    }
    const writes = byQueue ? [...byQueue].map(([queue, records]) => this.#channel(queue).append(records, this.#retention(queue)!, this.#now)) : [];
    if (aside) writes.push(this.#journal.hold(aside));
    if (writes.length === 0) {
      this.#journal.done(out);
      return this.#lastAppend;
    }
    const done = Promise.all([...writes, this.#lastAppend]).then(() => undefined);
    this.#lastAppend = done.catch(() => undefined);
    if (out.length > 0) done.then(() => this.#journal.done(out), () => undefined);
    return done;
  }

  /** a queue moving here: its records wait (in memory; the log has them) until `releaseMoving` */
  holdMoving(queue: string): void {
    // a slave's copies held for the feed were sent before: not held behind the hand-over (a
    // feed placing them late put them after it: move-calledoff 'old', the slave elected
    // replayed each id out of order at the call-off)
    if (!this.#moving.has(queue)) for (const [messageId, held] of this.#held) if (held.queue === queue) this.#heldBeforeMoving.add(messageId);
    if (this.#retention(queue) !== null && !this.#moving.has(queue)) this.#moving.set(queue, []);
  }

  /**
   * A move's hand-over (SPEC §13): the old set's history of `queue`, in acceptance order, written
   * before what waits held; `appendedNext` are the ids the router stores next (the messages
   * handed over): not written twice. Records held here that the old set had are dropped.
   */
  async adopt(queue: string, records: readonly HistoryRecord[], appendedNext: ReadonlySet<string>): Promise<number> {
    const retention = this.#retention(queue);
    if (retention === null || records.length === 0) return 0;
    // copies held since before the queue began to wait, that no feed placed yet (the master may
    // be gone): written first, where they arrived, so they stay before what is handed over
    if (this.#heldBeforeMoving.size > 0) await this.#release(() => true, '', (held) => held.queue === queue && this.#heldBeforeMoving.has(held.record.messageId));
    // what this broker's history of the queue has already (the queue was here before a move
    // away and back: its own records from then, which the hand-over carries again) is not
    // written twice (atk31c D: a replay after a -> b -> a gave 5,260-6,873 records twice)
    const have = new Set<string>();
    await this.#channels.get(queue)?.read({}, -Infinity, (record) => {
      have.add(record.messageId);
      return true;
    });
    const ids = new Set(records.map((r) => r.messageId));
    for (const id of appendedNext) if (ids.has(id) || have.has(id)) this.#alreadyWritten.add(id);
    const held = this.#moving.get(queue);
    const out: string[] = [];
    if (held) this.#moving.set(queue, held.filter((r) => !ids.has(r.messageId) || void out.push(r.messageId)));
    // clients' copies of messages the hand-over carries, held for the feed (a slave in step, a
    // master catching up): the client sent them again to this set after the old one stored them
    // unanswered. The hand-over's record is the one written: the held one went in too when the
    // feed placed it or the broker wrote what it held (atk31g F2: 585 of 607 handed back, twice)
    for (const [messageId, copy] of this.#held) {
      if (copy.queue !== queue || !ids.has(messageId)) continue;
      this.#held.delete(messageId);
      this.#heldBytes -= copy.bytes;
      out.push(messageId);
    }
    const fresh = have.size === 0 ? records : records.filter((r) => !have.has(r.messageId));
    // written before the messages are stored and fed: a follower syncing meanwhile would get
    // them from the catch-up and again from the feed (atk31f: a restarted slave of set a,
    // elected after a call-off, replayed b's hand-back twice)
    for (const r of fresh) if (appendedNext.has(r.messageId)) this.#storedNext.add(r.messageId);
    if (fresh.length > 0) await this.#channel(queue).append(fresh, retention, this.#now);
    this.#journal.done(out);
    if (this.#outOfStep) for (const r of fresh) this.#adoptedOutOfStep.add(r.messageId);
    return fresh.length;
  }

  /** the messages of a hand-over `adopt` wrote are stored now (or will not be): catch-ups take their records again */
  stored(messageIds: Iterable<string>): void {
    for (const messageId of messageIds) this.#storedNext.delete(messageId);
  }

  /** a record held for a queue moving here goes before `before`'s, as the router put its message aside (messages/moving.ts `putAside`) */
  placeMoving(queue: string, messageId: string, before: string): void {
    const held = this.#moving.get(queue) ?? [];
    const from = held.findLastIndex((record) => record.messageId === messageId);
    const to = held.findIndex((record) => record.messageId === before);
    if (from >= 0 && to >= 0 && to < from) held.splice(to, 0, held.splice(from, 1)[0]!);
  }

  /** the records held for a queue that moved here are written, after what the old set handed over */
  releaseMoving(queue: string): void {
    const held = this.#moving.get(queue);
    if (!held) return;
    this.#moving.delete(queue);
    for (const [messageId, copy] of this.#held) if (copy.queue === queue) this.#heldBeforeMoving.delete(messageId);
    const retention = this.#retention(queue);
    const out = held.map((r) => r.messageId);
    if (held.length === 0 || retention === null) return this.#journal.done(out);
    this.#channel(queue).append(held, retention, this.#now).then(() => this.#journal.done(out), (error: unknown) => this.#log.error('history could not be written', { queue, error: (error as Error).message }));
  }

  /** on a slave in step: a client's copies wait for the feed (past HOLD_MAX_BYTES the oldest are written now) */
  #hold(messages: readonly StoredMessage[]): Promise<void> {
    const at = this.#now();
    const journaled: Journaled[] = [];
    for (const m of messages) {
      if (m.data === undefined || this.#retention(m.queue) === null || this.#held.has(m.messageId)) continue;
      const record: HistoryRecord = { messageId: m.messageId, id: m.id, acceptedAt: m.acceptedAt, created: m.created, from: m.from, data: m.data };
      const bytes = (m.json?.length ?? JSON.stringify(m.data).length) + m.messageId.length + m.id.length + m.from.length + 100;
      this.#held.set(m.messageId, { queue: m.queue, record, bytes, at });
      this.#heldBytes += bytes;
      journaled.push({ queue: m.queue, record });
    }
    const written = this.#journal.hold(journaled);
    if (this.#heldBytes > HOLD_MAX_BYTES) void this.#release(() => this.#heldBytes > HOLD_MAX_BYTES / 2).catch(() => undefined);
    return written;
  }

  /**
   * Writes the held copies, oldest first, while `which` says so (where they arrived: the feed
   * never placed them); logs how many. Returns once they are on disk.
   */
  #release(which: (held: Held) => boolean, why = 'held past its bound', only: (held: Held) => boolean = () => true): Promise<void> {
    const records: PeerMessageLike[] = [];
    for (const [messageId, held] of this.#held) {
      if (!which(held)) break;
      if (!only(held)) continue;
      this.#held.delete(messageId);
      this.#heldBytes -= held.bytes;
      records.push({ ...held.record, queue: held.queue });
    }
    if (records.length === 0) return this.#lastAppend;
    if (why !== '') this.#log.warn('history records of clients\' copies written where they arrived, not placed by the master\'s feed', { records: records.length, reason: why });
    return this.#write(records).finally(() => this.#wake());
  }

  /** a slave in step: its history takes the master's order (clients' copies wait for the feed) */
  get placing(): boolean {
    return this.#placing;
  }

  /**
   * The master's feed names these messages, in its order (a slave in step): each one held
   * (a client's copy) or `fresh` (stored now from the feed) is written here, in that order; the
   * others are in the history already.
   */
  place(messages: readonly PeerMessageLike[], fresh: (messageId: string) => boolean): Promise<void> {
    const placed: PeerMessageLike[] = [];
    for (const m of messages) {
      const held = this.#held.get(m.messageId);
      if (held) {
        this.#held.delete(m.messageId);
        this.#heldBytes -= held.bytes;
        placed.push(m.data === undefined ? { ...held.record, queue: held.queue } : m);
      } else if (fresh(m.messageId)) {
        placed.push(m);
      }
    }
    return this.#write(placed);
  }

  /** held copies older than HOLD_MAX_MS: the master never named them */
  #releaseOld(): Promise<void> {
    if (this.#held.size === 0) return Promise.resolve();
    const before = this.#now() - HOLD_MAX_MS;
    return this.#release((held) => held.at < before, 'not named by the master');
  }

  /** no longer in step with a master as a slave: what is held is written where it arrived (then taken as this broker's own) */
  #stopPlacing(): Promise<void> {
    this.#placing = false;
    return this.#release(() => true, '').finally(() => this.#wake());
  }

  /**
   * At start (restart-check.ts): writes the records the held journal kept that the files lack;
   * returns the messages the log holds that a retained channel's history lacks (the caller appends
   * them: a copy sent again is deduplicated and would never reach the history); remembers the
   * records of the last `recentMs` the log does not know (never answered: not written twice).
   */
  async recover(held: readonly StoredMessage[], known: (messageId: string) => boolean, recentMs: number): Promise<StoredMessage[]> {
    const { missing, heldBack, heldDone, unanswered } = await checkAtRestart(held, this.#fromJournal.splice(0), known, recentMs, this.#now(), this.#retention, this.#channels);
    this.#journal.done(heldDone);
    // accepted before the stop: not held again at the first join (older than HOLD_MAX_MS, a join would not anyway)
    for (const messageId of [...heldBack.map((e) => e.record.messageId), ...missing.map((m) => m.messageId)]) this.#recovered.add(messageId);
    if (missing.length > 0 || heldBack.length > 0) setTimeout(() => this.#recovered.clear(), HOLD_MAX_MS).unref();
    await this.#write(heldBack.map(({ queue, record }) => ({ ...record, queue })));
    for (const messageId of unanswered) this.#alreadyWritten.add(messageId);
    // a copy sent again after the dedupe window is a new message anyway: forget them then
    if (this.#alreadyWritten.size > 0) setTimeout(() => this.#alreadyWritten.clear(), recentMs).unref();
    if (missing.length > 0 || heldBack.length > 0 || this.#alreadyWritten.size > 0) this.#log.warn('history made whole after a stop', { written: missing.length, held: heldBack.length, unanswered: this.#alreadyWritten.size });
    return missing;
  }

  stats(queue: string): HistoryStats | null {
    const channel = this.#channels.get(queue);
    return channel ? { bytes: channel.bytes, count: channel.count, oldestAt: channel.oldestAt } : null;
  }

  /** every channel with a history, with its stats */
  list(): Array<[queue: string, stats: HistoryStats]> {
    return [...this.#channels.keys()].sort().map((queue) => [queue, this.stats(queue)!]);
  }

  /**
   * Reads a channel's history in acceptance order (`each` as in ChannelHistory.read). Messages
   * past `retention.seconds` that are still on disk are skipped: a replay shows what is retained.
   */
  async read(queue: string, range: ReadRange, each: (record: ReadRecord) => boolean | Promise<boolean>, wholeWithinMs?: number): Promise<boolean> {
    const seconds = this.#retention(queue)?.seconds;
    this.replays++;
    this.replaying++;
    try {
      const notBefore = seconds === undefined ? -Infinity : this.#now() - seconds * 1000;
      if (wholeWithinMs === undefined) return (await this.#channels.get(queue)?.read(range, notBefore, each)) ?? true;
      // a master's replay: begun only while nothing is held back (`#whole`), up to the bound (the
      // channel's first records may be among those held)
      const until = performance.now() + wholeWithinMs;
      for (;;) {
        const left = until - performance.now();
        const channel = this.#channels.get(queue);
        if (left <= 0) {
          await channel?.read(range, notBefore, each);
          return false;
        }
        if (!channel ? this.#holdsNothing() : await channel.read(range, notBefore, each, () => this.#holdsNothing())) return true;
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([this.#whole(), new Promise<void>((resolve) => (timer = setTimeout(resolve, left)))]);
        clearTimeout(timer);
      }
    } finally {
      this.replaying--;
    }
  }

  /** `whisker delete QUEUE --history`: the channel's history emptied; bytes freed */
  async clear(queue: string): Promise<number> {
    this.#caughtUp.clear();
    return (await this.#channels.get(queue)?.clear()) ?? 0;
  }

  async trimAll(): Promise<void> {
    this.#forgetCaughtUp(this.#now());
    await this.#releaseOld().catch((error: unknown) => this.#log.error('held history records could not be written', { error: (error as Error).message }));
    const now = this.#now();
    for (const [queue, channel] of this.#channels) {
      const retention = this.#retention(queue);
      try {
        // a channel no longer retained keeps nothing: its history goes at the next trim
        if (retention === null) {
          await channel.destroy();
          this.#channels.delete(queue);
          this.#log.info('history of a channel no longer retained removed', { queue });
        } else {
          await channel.trim(retention, now);
        }
      } catch (error) {
        this.#log.error('history trim failed', { queue, error: (error as Error).message });
      }
    }
  }

  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    await Promise.all([...this.#channels.values()].map((c) => c.close()));
    await this.#journal.close();
  }

  // ---- mirrors: out of step, catch-up (docs/operations.md#history-catch-up) ----------------

  /**
   * This broker is neither master nor in step with one: its own writes go after whatever the
   * master's catch-up will bring (a no-op while already so).
   */
  outOfStep(): Promise<void> {
    this.#outOfStep = true;
    const turn = ++this.#turn;
    const sides = Promise.all([...this.#channels.values()].map((c) => c.beginSide()));
    // after the side lines began: what was held goes with this broker's own writes (after what
    // a join still under way holds again: it is older)
    return this.#roleChange(Promise.all([sides, this.#afterJoins(turn, () => this.#stopPlacing())]));
  }

  /**
   * `stop` now, or once the joins of side lines under way (`inStep(true)`) have held their
   * records again, if no role change was asked since (`turn`): the records those joins hold
   * again are older than what is held now, and were written after it when a master elected
   * while catching up ended its hold, or was fenced, during its join (nemesis seed 27 under
   * load: 1,484 records out of send order). Until then clients' copies stay held.
   */
  #afterJoins(turn: number, stop: () => Promise<void>): Promise<void> {
    if (this.#joining === 0 || !this.#placing) return stop();
    return this.#joined.then(() => (turn === this.#turn ? this.#afterJoins(turn, stop) : undefined));
  }

  #roleChange(change: Promise<unknown>): Promise<void> {
    this.#changingRole++;
    const done = change.then(() => undefined).finally(() => {
      this.#changingRole--;
      this.#wake();
    });
    this.#roleChanged = done.catch(() => undefined);
    return done;
  }

  /**
   * Settles once nothing is held back from this history: in step (a master's), no role change
   * under way, no clients' copies waiting to be placed (a master catching up writes them once its
   * peers' offers are in: mirror/promotion-gate.ts), and what was asked written. A master's replay
   * (`read` with `wholeWithinMs`) waits for it between its tries. Out of step is held back: begun
   * then, it lacked what the offers bring when elected again (atk27j F3: 480 and 4,011 OK sends).
   */
  #whole(): Promise<void> {
    if (this.#holdsNothing()) return this.#lastAppend;
    return new Promise<void>((resolve) => this.#wholeWaiters.push(resolve)).then(() => this.#whole());
  }

  #holdsNothing(): boolean {
    return this.#changingRole === 0 && !this.#placing && this.#held.size === 0 && !this.#outOfStep;
  }

  #wake(): void {
    const waiters = this.#wholeWaiters;
    if (waiters.length === 0) return;
    this.#wholeWaiters = [];
    for (const wake of waiters) wake();
  }

  /**
   * Settles once the role changes asked so far have written what they hold (a promoted slave's
   * held copies, its side lines joined); null when none is under way. A master's catch-up view
   * waits for it: those records are named by no feed frame (issue 27).
   */
  roleSettled(): Promise<void> | null {
    return this.#changingRole > 0 ? this.#roleChanged : null;
  }

  /**
   * In step with a master (after its catch-up), or master: the channels' own writes join the
   * rest. `placing`: a slave in step, from now on its history takes its master's feed order
   * (clients' copies wait for the feed: `place`); a master writes what it holds at once.
   */
  inStep(placing = false): Promise<void> {
    this.#outOfStep = false;
    const turn = ++this.#turn;
    const held = placing ? this.#lastAppend : this.#afterJoins(turn, () => this.#stopPlacing());
    if (placing || this.#joining === 0) this.#placing = placing;
    // (taken by this join once: a later one holds again what is recent then)
    const keep = this.#adoptedOutOfStep.size > 0 ? new Set([...this.#recovered, ...this.#adoptedOutOfStep]) : this.#recovered;
    if (this.#recovered.size > 0) this.#recovered = new Set();
    if (this.#adoptedOutOfStep.size > 0) this.#adoptedOutOfStep = new Set();
    const since = this.#now() - HOLD_MAX_MS;
    // the records a join takes off the disk to hold them again are in the journal before they leave the files
    const hold = (queue: string) => (placing ? { since, maxBytes: HOLD_MAX_BYTES / 2, keep, journal: (records: readonly HistoryRecord[]) => this.#journal.hold(records.map((record) => ({ queue, record }))) } : undefined);
    const joins = Promise.all([...this.#channels].map(([queue, channel]) => channel.joinSide(hold(queue)).then((records) => this.#holdAgain(queue, records))));
    // only a join that holds records again (placing) is waited for by a later stop of placing
    if (!placing) return this.#roleChange(Promise.all([held, joins]));
    this.#joining++;
    this.#joined = joins.then(
      () => undefined,
      () => undefined,
    ).finally(() => this.#joining--);
    return this.#roleChange(Promise.all([held, joins]));
  }

  /**
   * A slave in step: its own records of the last HOLD_MAX_MS that its master's catch-up did not
   * bring wait for the feed as clients' copies do, before those held since (they arrived first)
   */
  #holdAgain(queue: string, records: readonly HistoryRecord[]): void {
    if (records.length === 0) return;
    const at = this.#now();
    const since = [...this.#held];
    this.#held.clear();
    // written already while the queue waits for a hand-over: before it, as a copy held when it began to wait
    // (a slave of set a, its master killed at a call-off, elected while catching up before it took the
    // hand-back: the copies only it had, sent before the move, went after the hand-back; slave-calloff-order.test)
    const before = this.#moving.has(queue);
    for (const record of records) {
      const bytes = JSON.stringify(record.data).length + record.messageId.length + record.id.length + record.from.length + 100;
      this.#held.set(record.messageId, { queue, record, bytes, at });
      this.#heldBytes += bytes;
      if (before) this.#heldBeforeMoving.add(record.messageId);
    }
    for (const [messageId, held] of since) if (!this.#held.has(messageId)) this.#held.set(messageId, held);
    else this.#heldBytes -= held.bytes;
    if (!this.#placing) void this.#release(() => true, '').catch(() => undefined);
    else if (this.#heldBytes > HOLD_MAX_BYTES) void this.#release(() => this.#heldBytes > HOLD_MAX_BYTES / 2).catch(() => undefined);
  }

  /** per retained channel with a history: the ids of its newest records from before this broker fell out of step */
  async anchors(count: number): Promise<Array<{ queue: string; after: string[] }>> {
    const anchors: Array<{ queue: string; after: string[] }> = [];
    for (const [queue, channel] of this.#channels) {
      if (this.#retention(queue) === null) continue;
      const after = await channel.anchors(count);
      if (after.length > 0) anchors.push({ queue, after });
    }
    return anchors;
  }

  /** the master's records of `queue` follow `after` (null: from the start) */
  catchUpBegin(queue: string, after: string | null): Promise<void> {
    // the records it had go (the master's whole history follows): earlier catch-ups' ids may be among them
    if (after === null) this.#caughtUp.clear();
    return this.#channel(queue).catchUpBegin(after);
  }

  catchUpWrite(queue: string, records: readonly HistoryRecord[]): Promise<void> {
    const retention = this.#retention(queue);
    if (retention === null) return Promise.resolve(); // not retained here: kept nowhere
    return this.#channel(queue)
      .catchUpWrite(records, retention, this.#now)
      .then((taken) => void (taken && this.#caught(records)));
  }

  /** remembers the recent records of a catch-up (`#caughtUp`) */
  #caught(records: readonly { messageId: string; acceptedAt: number }[]): void {
    const now = this.#now();
    for (const r of records) {
      if (r.acceptedAt < now - CAUGHT_UP_MS) continue;
      this.#caughtUp.delete(r.messageId);
      this.#caughtUp.set(r.messageId, now);
    }
    this.#forgetCaughtUp(now);
  }

  #forgetCaughtUp(now: number): void {
    for (const [messageId, at] of this.#caughtUp) {
      if (at >= now - CAUGHT_UP_MS && this.#caughtUp.size <= CAUGHT_UP_MAX) break;
      this.#caughtUp.delete(messageId);
    }
  }

  /**
   * Messages the master's feed named during a sync (its backlog, sent before `done`): written
   * after that channel's catch-up, in the feed's order; one the catch-up brought stays at its place
   * there (a master fenced while catching up writes its held records, its feed names their messages
   * once its hold ends: atk27k F3, 4,896 twice). A channel without one (its master had no record
   * of it) keeps them where this broker writes them: named, not held again at the join (30 s)
   */
  catchUpFeed(messages: readonly PeerMessageLike[]): Promise<void> {
    const byQueue = new Map<string, HistoryRecord[]>();
    for (const m of messages) {
      if (this.#retention(m.queue) === null || m.data === undefined || this.#caughtUp.has(m.messageId)) continue;
      let records = byQueue.get(m.queue);
      if (!records) byQueue.set(m.queue, (records = []));
      records.push({ messageId: m.messageId, id: m.id, acceptedAt: m.acceptedAt, created: m.created, from: m.from, data: m.data });
    }
    const taken = (records: HistoryRecord[]) => (took: boolean) => void (took ? this.#caught(records) : records.forEach((r) => this.#adoptedOutOfStep.add(r.messageId)));
    const writes = [...byQueue].map(([queue, records]) => (this.#channels.get(queue)?.catchUpWrite(records, this.#retention(queue)!, this.#now) ?? Promise.resolve(false)).then(taken(records)));
    return Promise.all(writes).then(() => undefined);
  }

  catchUpEnd(queue: string): Promise<void> {
    return this.#channels.get(queue)?.catchUpEnd() ?? Promise.resolve();
  }

  /**
   * What a master reads for a follower's catch-up: the channels retained here, as they are now,
   * less the records of a hand-over whose messages are not stored yet (the feed names them)
   */
  views(): Array<{ queue: string; view: HistoryView }> {
    const views: Array<{ queue: string; view: HistoryView }> = [];
    const skip = this.#storedNext.size > 0 ? new Set(this.#storedNext) : undefined;
    if (skip) this.#log.info('history catch-up: a hand-over\'s records whose messages are not stored yet are left out (the feed names them)', { records: skip.size });
    for (const [queue, channel] of this.#channels) {
      const retention = this.#retention(queue);
      if (retention === null) continue;
      const notBefore = retention.seconds === undefined ? -Infinity : this.#now() - retention.seconds * 1000;
      views.push({ queue, view: channel.view(notBefore, skip) });
    }
    return views;
  }

  /** made and opened at once: its open is queued before any append to it */
  #channel(queue: string): ChannelHistory {
    let channel = this.#channels.get(queue);
    if (!channel) {
      channel = new ChannelHistory(join(this.#dir, queue.replace('/', '@')));
      this.#channels.set(queue, channel);
      channel.open().catch((error: unknown) => this.#log.error('history could not be opened', { queue, error: (error as Error).message }));
      if (this.#outOfStep) channel.beginSide().catch((error: unknown) => this.#log.error('history could not be set aside', { queue, error: (error as Error).message }));
    }
    return channel;
  }
}
