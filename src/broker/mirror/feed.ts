import type { BrokerFrame, FollowHistory, PeerMessage, PeerReservation, PeerSettlement } from '../../protocol/frames.js';
import type { Logger } from '../../runtime/logger.js';
import { type HistoryPlan, HistoryStream } from './history-stream.js';
import { type HeldMessages, type Replica, toPeerMessage } from './replica.js';
import type { StoreEvent, StoredMessage } from '../store/store.js';
import type { FollowerState } from './types.js';

/** what one peer session can be handed: the feed writes through it, nothing else */
export interface Follower {
  send(frame: BrokerFrame): void;
  /** a frame already encoded (the same feed text goes to every follower) */
  sendText(text: string): void;
  /** resolves once the link has drained under its bound (a catch-up waits for it) */
  whenWritable(): Promise<void>;
  /** the peer's serviceId, for the dashboard's view of who follows this broker */
  readonly clientName?: string;
  /** bytes written to the link and not taken by the socket yet */
  readonly unsentBytes: number;
  /** owed more than limits.maxMirrorLinkBytes: the link is closed (the mirror syncs again when it is back) */
  dropLagging(unsentBytes: number, limitBytes: number): void;
}

const CHUNK_MESSAGES = 1_000;
const CHUNK_BYTES = 4 * 1_048_576;

/**
 * What a master may owe one mirror's link before it closes it: limits.maxMirrorLinkBytes, but
 * never less than a paced sync can owe by itself (the soft bound, one chunk, one large message
 * and a frame), or a sync would be cut every time.
 */
export function mirrorLinkBound(limits: { readonly maxMirrorLinkBytes: number; readonly maxBufferedBytesPerConnection: number; readonly maxPayloadBytes: number }): number {
  return Math.max(limits.maxMirrorLinkBytes, limits.maxBufferedBytesPerConnection + CHUNK_BYTES + 2 * limits.maxPayloadBytes);
}
/** reserved ids per `reservations` frame of a sync (the frame decoder takes up to 10,000) */
const CHUNK_RESERVATIONS = 1_000;

/**
 * The master's side of mirroring (SPEC §9): a mirror that follows gets a `sync` of what this
 * broker holds and of the recent ids it settled, then a `feed` of every settlement and every
 * message this broker accepts or makes (dead letters), once per tick: a client that has not
 * reconnected to the mirror yet cannot leave it behind. Only while this broker is master.
 *
 * Why this file is long: the one owner of what a master owes each follower: its sync (paced by
 * the link), the history catch-up and the feed that waits behind both, the feed kept for
 * followers while fenced, and the bound on all of it; split, their order would be read in
 * several places.
 */
export class PeerFeed {
  readonly #replica: Replica;
  readonly #followers = new Set<Follower>();
  /** followers still getting their sync, with the feed frames that come after it */
  readonly #syncing = new Map<Follower, Array<BrokerFrame | string>>();
  /** the size of those feed frames (limits.maxMirrorLinkBytes bounds them with the socket's buffer) */
  readonly #backlogBytes = new Map<Follower, number>();
  /** the history catch-up of a follower's sync, while it runs */
  readonly #catchUps = new Map<Follower, HistoryStream>();
  /** followers whose sync waits for this broker's history to write what its role change holds */
  readonly #waiting = new Set<Follower>();
  /**
   * followers in step when this broker was fenced (demoted), their links still up: what happens
   * here meanwhile waits for them, so the same broker re-elected resumes their feed without a
   * sync (docs/protocol.md#peers). `generation`: the replica's, at the fence; it changes when this
   * broker follows another master, which breaks the continuity
   */
  readonly #suspended = new Map<Follower, { backlog: Array<BrokerFrame | string>; bytes: number; generation: number }>();
  #settled: PeerSettlement[] = [];
  #removed: string[] = [];
  /** each message made since the last feed, as its JSON in the frame (the body spliced in as stored) */
  #messages: string[] = [];
  #scheduled = false;

  readonly #log: Logger;
  /** limits.maxMirrorLinkBytes, read at each check (live) */
  readonly #linkBytes: () => number;

  constructor(replica: Replica, log: Logger, linkBytes: () => number) {
    this.#replica = replica;
    this.#log = log;
    this.#linkBytes = linkBytes;
  }

  get followerCount(): number {
    return this.#followers.size;
  }

  /**
   * A mirror asks to follow: only a master answers, with its state first. Bodies left on disk
   * are read a chunk at a time; the feed of what happens meanwhile waits behind the sync.
   * `history`: the follower takes a history catch-up (its newest ids per retained channel).
   */
  follow(follower: Follower, history?: readonly FollowHistory[], resume = false): void {
    if (!this.#replica.isMaster || this.#followers.has(follower) || this.#syncing.has(follower) || this.#waiting.has(follower)) return;
    if (resume) {
      this.#resume(follower);
      return;
    }
    // a promoted slave still writing the clients' copies it held: no feed frame names them, so
    // the catch-up's view is taken once they are written (issue 27)
    const settling = history ? this.#replica.historySettled() : null;
    if (settling) {
      this.#waiting.add(follower);
      void settling.then(() => this.#waiting.delete(follower) && this.follow(follower, history));
      return;
    }
    this.#suspended.delete(follower);
    this.#flush(); // what happened before the snapshot reaches the older followers first
    // reserved ids first, whole: what changes later follows in order (SPEC §5)
    const reservations = this.#replica.reservations();
    for (let i = 0; i === 0 || i < reservations.length; i += CHUNK_RESERVATIONS) {
      follower.send({ type: 'reservations', full: i === 0, set: reservations.slice(i, i + CHUNK_RESERVATIONS), released: [] });
    }
    const { messages, removed } = this.#replica.snapshot();
    // the history as it is now: what is accepted from now on reaches the follower in the feed
    const plan = history ? this.#replica.historyPlan(history) : null;
    const backlog: Array<BrokerFrame | string> = [];
    this.#syncing.set(follower, backlog);
    this.#backlogBytes.set(follower, 0);
    void this.#sync(follower, backlog, messages, removed, plan);
  }

  /**
   * A follower in step when this broker was fenced asks for the feed kept since: sent, then
   * `sync` with `resumed: true`, and it is in step again. Not kept (its link was closed, the feed
   * kept grew past the link's bound, or this broker followed another master meanwhile):
   * `resumed: false`, and the follower follows again for a sync.
   */
  #resume(follower: Follower): void {
    const kept = this.#suspended.get(follower);
    if (!kept || kept.generation !== this.#replica.followGeneration) {
      this.#suspended.delete(follower);
      follower.send({ type: 'sync', messages: [], removed: [], done: true, resumed: false });
      return;
    }
    this.#flush(); // what happened up to now joins the kept feed, in order
    this.#suspended.delete(follower);
    for (const frame of kept.backlog) {
      if (typeof frame === 'string') follower.sendText(frame);
      else follower.send(frame);
    }
    follower.send({ type: 'sync', messages: [], removed: [], done: true, resumed: true });
    this.#followers.add(follower);
    this.#log.info('a mirror in step before this broker was fenced resumed its feed: no sync', { peer: follower.clientName, frames: kept.backlog.length, bytes: kept.bytes });
  }

  /** the follower wrote `history` frame `n` */
  historyAck(follower: Follower, n: number): void {
    this.#catchUps.get(follower)?.acked(n);
  }

  async #sync(follower: Follower, backlog: Array<BrokerFrame | string>, messages: HeldMessages, removed: readonly string[], plan: HistoryPlan | null): Promise<void> {
    let chunk: PeerMessage[] = [];
    let bytes = 0;
    for (let part = messages.next(CHUNK_MESSAGES); part.length > 0; part = messages.next(CHUNK_MESSAGES)) {
      // a store that cannot read now: the mirror gets what is in memory (the master keeps the rest)
      const read = await this.#replica.withBodies(part).catch((error: unknown) => {
        const inMemory = part.filter((m) => m.data !== undefined);
        this.#log.error('sync to a mirror: bodies on disk could not be read, those messages left out of it', { messages: part.length - inMemory.length, error: (error as Error).message });
        return inMemory.map(toPeerMessage);
      });
      if (this.#syncing.get(follower) !== backlog) return; // gone, or this broker was demoted
      for (const message of read) {
        chunk.push(message);
        bytes += approximateBytes(message);
        if (chunk.length >= CHUNK_MESSAGES || bytes >= CHUNK_BYTES) {
          // paced by the link: the sync never owes the mirror much more than a chunk past its soft bound
          await follower.whenWritable();
          if (this.#syncing.get(follower) !== backlog) return;
          follower.send({ type: 'sync', messages: chunk, removed: [], done: false });
          chunk = [];
          bytes = 0;
        }
      }
    }
    for (let i = 0; i < removed.length; i += 10 * CHUNK_MESSAGES) {
      await follower.whenWritable();
      if (this.#syncing.get(follower) !== backlog) return;
      follower.send({ type: 'sync', messages: chunk, removed: removed.slice(i, i + 10 * CHUNK_MESSAGES), done: false });
      chunk = [];
    }
    if (plan) {
      // the sync's last messages before the catch-up and the feed that waited behind it: sent
      // with `done`, after that feed, they were queued after newer sends (atk27e E5: 905)
      if (chunk.length > 0) follower.send({ type: 'sync', messages: chunk, removed: [], done: false });
      chunk = [];
      if (!(await this.#catchUp(follower, backlog, plan))) return;
    }
    // with a catch-up, the feed of what happened meanwhile comes before `done`: the follower
    // writes its history after the catch-up's (docs/protocol.md#history-catch-up)
    if (!plan) follower.send({ type: 'sync', messages: chunk, removed: [], done: true });
    this.#syncing.delete(follower);
    this.#backlogBytes.delete(follower);
    for (const frame of backlog) {
      if (typeof frame === 'string') follower.sendText(frame);
      else follower.send(frame);
    }
    if (plan) follower.send({ type: 'sync', messages: [], removed: [], done: true });
    this.#followers.add(follower);
  }

  /** the history records the follower lacks, before its sync is done (docs/protocol.md#history-catch-up) */
  async #catchUp(follower: Follower, backlog: Array<BrokerFrame | string>, plan: HistoryPlan): Promise<boolean> {
    const stream = new HistoryStream(follower);
    this.#catchUps.set(follower, stream);
    try {
      const ok = await stream.run(plan);
      if (ok && this.#syncing.get(follower) === backlog) {
        if (stream.records > 0) this.#log.info('history catch-up sent to a mirror', { peer: follower.clientName, records: stream.records });
        return true;
      }
    } catch (error) {
      this.#log.error('history catch-up to a mirror failed: its sync ends without it', { peer: follower.clientName, error: (error as Error).message });
      return this.#syncing.get(follower) === backlog;
    } finally {
      if (this.#catchUps.get(follower) === stream) this.#catchUps.delete(follower);
    }
    return false;
  }

  /** the peers that follow this broker, by serviceId: in step once past their sync; the bytes owed to each */
  followers(): ReadonlyMap<string, FollowerState> {
    const states = new Map<string, FollowerState>();
    for (const follower of this.#syncing.keys()) if (follower.clientName) states.set(follower.clientName, { inStep: false, owedBytes: this.#owed(follower) });
    for (const follower of this.#followers) if (follower.clientName) states.set(follower.clientName, { inStep: true, owedBytes: this.#owed(follower) });
    return states;
  }

  unfollow(follower: Follower): void {
    this.#waiting.delete(follower);
    this.#followers.delete(follower);
    this.#suspended.delete(follower);
    this.#syncing.delete(follower);
    this.#backlogBytes.delete(follower);
    this.#catchUps.get(follower)?.cancel();
  }

  /** this broker stopped acting as master: followers will ask again when it is one */
  demoted(): void {
    // those in step keep their feed, kept here until this broker is master again (`#resume`);
    // nothing is sent to them meanwhile. Those still in their sync follow again for a new one
    const generation = this.#replica.followGeneration;
    for (const follower of this.#followers) this.#suspended.set(follower, { backlog: [], bytes: 0, generation });
    this.#followers.clear();
    this.#waiting.clear();
    this.#syncing.clear();
    this.#backlogBytes.clear();
    for (const stream of this.#catchUps.values()) stream.cancel();
    this.#flush(); // what happened before the fence heads the kept feed
  }

  /** a client's message (or a peer's offer taken as master) stored here while fenced: the kept feed names it, as a master's would */
  storedWhileFenced(message: StoredMessage): void {
    if (this.#suspended.size === 0 || this.#replica.isMaster) return;
    this.#messages.push(encodePeerMessage(message));
    this.#schedule();
  }

  get #quiet(): boolean {
    return this.#followers.size === 0 && this.#syncing.size === 0 && this.#suspended.size === 0;
  }

  settled(events: readonly StoreEvent[]): void {
    if (this.#quiet) return;
    for (const event of events) {
      if (event.kind === 'settle') this.#settled.push({ messageId: event.messageId, group: event.group });
      else if (event.kind === 'remove') this.#removed.push(event.messageId);
    }
    this.#schedule();
  }

  /** reserved ids this master took, changed or released: every follower's table follows */
  reservationsChanged(set: readonly PeerReservation[], released: readonly string[]): void {
    const frame: BrokerFrame = { type: 'reservations', full: false, set: [...set], released: [...released] };
    for (const follower of this.#followers) follower.send(frame);
    this.#hold(frame, JSON.stringify(frame).length);
    this.#bound();
  }

  made(message: StoredMessage): void {
    if (this.#quiet) return;
    // now: a queue past its window of bodies may drop this one's body once it takes it
    this.#messages.push(encodePeerMessage(message));
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    this.#scheduled = false;
    if (this.#settled.length === 0 && this.#removed.length === 0 && this.#messages.length === 0) return;
    // encoded once for every follower: what JSON.stringify makes of the feed frame
    const frame = `{"type":"feed","settled":${JSON.stringify(this.#settled)},"removed":${JSON.stringify(this.#removed)},"messages":[${this.#messages.join(',')}]}`;
    this.#settled = [];
    this.#removed = [];
    this.#messages = [];
    for (const follower of this.#followers) follower.sendText(frame);
    this.#hold(frame, frame.length);
    this.#bound();
  }

  /** a frame for the followers still in their sync: it waits in their backlog */
  #hold(frame: BrokerFrame | string, bytes: number): void {
    for (const [follower, backlog] of this.#syncing) {
      backlog.push(frame);
      this.#backlogBytes.set(follower, (this.#backlogBytes.get(follower) ?? 0) + bytes);
    }
    for (const [follower, kept] of this.#suspended) {
      if (kept.generation !== this.#replica.followGeneration) {
        this.#suspended.delete(follower); // this broker followed another master: nothing to resume
        continue;
      }
      kept.backlog.push(frame);
      kept.bytes += bytes;
    }
  }

  #owed(follower: Follower): number {
    return follower.unsentBytes + (this.#backlogBytes.get(follower) ?? 0);
  }

  /**
   * A mirror that does not read what it is sent (it applies slower than this master takes
   * messages) is owed at most limits.maxMirrorLinkBytes: past it, its link is closed and it syncs
   * again when it is back (docs/security.md#limits). The session checks its socket's own buffer
   * at every write; this adds a sync's waiting feed.
   */
  #bound(): void {
    if (this.#syncing.size === 0 && this.#suspended.size === 0) return;
    const limit = this.#linkBytes();
    // a kept feed past the bound is dropped: that follower syncs when this broker is master again
    for (const [follower, kept] of [...this.#suspended]) {
      if (kept.bytes + follower.unsentBytes <= limit) continue;
      this.#suspended.delete(follower);
      this.#log.warn('the feed kept for a mirror while fenced passed limits.maxMirrorLinkBytes: it will sync again', { peer: follower.clientName, bytes: kept.bytes });
    }
    for (const follower of [...this.#syncing.keys()]) {
      const owed = this.#owed(follower);
      if (owed > limit) {
        this.unfollow(follower);
        follower.dropLagging(owed, limit);
      }
    }
  }
}


/** `JSON.stringify(toPeerMessage(m))`, with the body's JSON made at intake spliced in */
export function encodePeerMessage(m: StoredMessage): string {
  if (m.json === undefined) return JSON.stringify(toPeerMessage(m));
  const s = JSON.stringify;
  return `{"messageId":${s(m.messageId)},"queue":${s(m.queue)},"id":${s(m.id)},"data":${m.json},"created":${m.created},"acceptedAt":${m.acceptedAt},"from":${s(m.from)}}`;
}

function approximateBytes(message: PeerMessage): number {
  return 200 + message.queue.length + message.id.length + (typeof message.data === 'string' ? message.data.length : JSON.stringify(message.data).length);
}
