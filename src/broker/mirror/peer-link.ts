import { Connection, type ConnectionOwner } from '../../link/connection.js';
import type { HostTarget } from '../../link/hosts.js';
import { type BrokerFrame, type FeedFrame, FOLLOW_ANCHORS, type FollowHistory, type HistoryFrame, type KeysFrame, type PeerMessage, type PeerSettlement, type SyncFrame } from '../../protocol/frames.js';
import { ApplyBacklog, type Unapplied } from './apply-backlog.js';
import type { KeyLink } from './key-sync.js';
import { UNCONFIRMED_AFTER_MS } from './unconfirmed.js';
import type { LinkDeps, LinkOwner, PeerStatus, PeerView } from './types.js';

/** messages per `offer` frame at most (and under the master's frame limit) */
const OFFER_CHUNK = 1_000;
/** feed frames applied together hold at most about this many messages, settlements and removals */
const FEED_BATCH_ITEMS = 5_000;
/** the routine offer of those is logged once in this long, with the count since; the metric counts each */
const OFFER_LOG_EVERY_MS = 60_000;
/** a fenced master not elected again within this long: its followers stop waiting for it, as for a lost master */
export const FENCED_WAIT_MS = 60_000;

/**
 * One `follow` of ours and the master's sync in answer. Its frames are applied long after they
 * are read when the apply chain lags (a large sync, a loaded host): each one is judged by the
 * sync it was read in, never by the link's state when it is applied (issue 27, nemesis seed 27)
 */
interface Sync {
  /** the ids it named, its feed included: what we hold beyond them may be ours alone */
  readonly named: Set<string>;
  /**
   * what its `history` and `feed` frames bring is written in the history's catch-up place (the
   * master's order, before our own writes): from the `follow` until it is done, and, given up
   * (the link cut, the master fenced), until a new `follow` begins on any link, so that place
   * holds the master's history without a gap wherever the frames read stop
   * (docs/protocol.md#history-catch-up)
   */
  catchingUp: boolean;
}

/**
 * Our link to one peer: a client connection that logs in with the broker's key pair as
 * `role: 'peer'`, tells our role, and follows the peer while it is the master.
 *
 * Why this file is long: following is one state machine per link (dial, follow, sync, in step,
 * waiting for a fenced master to resume, out of step) whose transitions share the apply chain
 * and the named set; split by state, each half would reach into the other's fields. A split to
 * try: the offers (held-only-here, unconfirmed, `#offer`) into their own file.
 */
export class PeerLink implements KeyLink {
  readonly target: HostTarget;
  readonly #peers: LinkOwner;
  readonly #connection: Connection;
  view: PeerView | null = null;
  #following = false;
  /** counts follows: an anchors read that finished after its follow ended sends nothing */
  #follows = 0;
  #linked = false;
  #told = '';
  /** the peer said it takes `keys` frames (its peerState): an older one would close the link */
  #peerTakesKeys = false;
  /** sync and feed frames are applied one after the other: a store append may come between */
  #applying: Promise<void> = Promise.resolve();
  /**
   * feed frames received while the one before them is applied, not begun yet (the last thing
   * chained): applied together, one store append and one history write for all of them
   */
  #feedBatch: FeedBatch | null = null;
  /** the sync of our current `follow`, until it is done or we stop following */
  #sync: Sync | null = null;
  /** the sync we gave up last, its frames still read into the history's catch-up place */
  #gaveUp: Sync | null = null;
  /** while in step with the master: offers what only we got from clients, once a second */
  #offerTimer: NodeJS.Timeout | null = null;
  /** frames from the master received and not applied yet: past limits.maxMirrorBacklogBytes the link is not read */
  readonly #backlog: ApplyBacklog;
  #offerLoggedAt = -Infinity;
  /** the peer keeps its followers' feed while fenced (its peerState said `resumes`) */
  #peerResumes = false;
  /**
   * in step with this peer when it was fenced, the link still up: not following, but what
   * being in step keeps (the history in the feed's order, the tracking of clients' copies, the
   * queues bounded by the master's settlements) is kept, for a `follow` with `resume`
   */
  #suspended = false;
  /** a `follow` with `resume` sent, its answer (`sync` with `resumed`) not read yet */
  #resuming = false;
  /** ends the wait for a fenced master after FENCED_WAIT_MS */
  #fencedWait: NodeJS.Timeout | null = null;
  #syncs = 0;
  #resumes = 0;
  #offeredSinceLog = 0;

  readonly #deps: LinkDeps;

  constructor(target: HostTarget, peers: LinkOwner, deps: LinkDeps) {
    this.target = target;
    this.#peers = peers;
    this.#deps = deps;
    const { serviceId, keys, dialOptions } = deps;
    let dialed = dialOptions();
    const owner: ConnectionOwner = {
      clientId: serviceId,
      keys,
      role: 'peer',
      // read first at every dial (the heartbeat, once the socket opened, uses what it read then)
      get tls() {
        try {
          dialed = dialOptions();
        } catch (error) {
          deps.log.error('could not read peerTls files: dialing with the last ones read', { peer: target.spec, error: (error as Error).message });
        }
        return dialed.tls;
      },
      get heartbeatTimeoutMs() {
        return dialed.heartbeatTimeoutMs;
      },
      reconnect: { initialMs: 200, maxMs: 5_000, factor: 1.5 },
      onReady: () => {
        this.#linked = true;
        this.#told = '';
        this.refresh();
      },
      onDown: (_connection, error) => {
        if (error) deps.log.warn('peer refused our link', { peer: target.spec, code: error.code, reason: error.message });
        else if (this.#linked) deps.log.warn('link to peer lost: its role is unknown until it is back', { peer: target.spec });
        this.#linked = false;
        // a master elected while catching up does not wait for this peer's offer (mirror/promotion-gate.ts)
        peers.linkDown(this.serviceId);
        this.#peerTakesKeys = false;
        this.#peerResumes = false;
        this.view = null;
        this.#stopFollowing();
        peers.update();
      },
      onFrame: (_connection, frame, bytes) => this.#onFrame(frame, bytes),
    };
    this.#connection = new Connection(target, owner);
    this.#backlog = new ApplyBacklog(this.#connection, deps.backlogBytes, deps.log, target.serviceId ?? target.spec);
  }

  start(): void {
    this.#connection.start();
  }

  get serviceId(): string {
    return this.target.serviceId!;
  }

  /** client keys for the peer to apply (mirror/key-sync.ts): true once it answered */
  sendKeys(lists: Pick<KeysFrame, 'bound' | 'revoked'>): Promise<boolean> {
    if (!this.#peerTakesKeys) return Promise.resolve(false);
    return new Promise((resolve) => this.#connection.request((req) => ({ type: 'keys', req, ...lists }), (reply) => resolve(reply !== null && !reply.error)));
  }

  close(): Promise<void> {
    this.#stopFollowing();
    return this.#connection.close();
  }

  status(): Omit<PeerStatus, 'followsUs'> {
    const role = this.view ? (this.view.isMaster ? 'master' : 'slave') : 'unknown';
    const inStep = this.#inStepNow();
    return {
      serviceId: this.target.serviceId!, spec: this.target.spec, connected: this.#connection.isReady, role, following: this.#following, inStep,
      lagMessages: this.#backlog.items, lagSeconds: this.#backlog.seconds, lagBytes: this.#backlog.bytes, readingPaused: this.#connection.readingPaused, owedBytes: 0,
      syncs: this.#syncs, resumes: this.#resumes,
    };
  }

  /**
   * Settles once the frames received from this peer until now are applied (`sync`, `feed`,
   * `history`): a replay on a promoted slave waits for them (Peers.applied)
   */
  applied(): Promise<void> {
    return this.#applying.then(
      () => undefined,
      () => undefined,
    );
  }

  /** tells the peer our role when it changed, and follows it when it is the master and we are not */
  refresh(): void {
    if (!this.#connection.isReady) return;
    const state = this.#peers.state();
    const told = JSON.stringify(state);
    if (told !== this.#told) {
      this.#told = told;
      this.#connection.send(state);
      // after the role: a name bound two ways is settled by who delivers (mirror/key-sync.ts)
      this.#sendAllKeys();
    }
    const shouldFollow = this.view?.isMaster === true && !this.#peers.isMaster;
    if (shouldFollow && !this.#following) {
      this.#following = true;
      if (this.#suspended) {
        // the same master again (re-elected, maybe under a new epoch): its feed kept since the fence
        this.#suspended = false;
        this.#resuming = true;
        this.#endFencedWait();
        ++this.#follows;
        this.#connection.send({ type: 'follow', resume: true });
        return;
      }
      this.#peers.followStarted(this);
      this.#deps.replica.followsMaster(true);
      void this.#follow(++this.#follows);
    } else if (!shouldFollow) {
      const fenced = this.view !== null && !this.view.isMaster && this.#peerResumes && !this.#peers.isMaster && !this.#peers.followsOther(this);
      if (fenced && (this.#suspended || this.#resuming || this.#inStepNow())) this.#suspend();
      else this.#stopFollowing();
    }
  }

  /** following this peer as master (its sync or its feed), or waiting to resume it */
  get following(): boolean {
    return this.#following || this.#suspended;
  }

  #inStepNow(): boolean {
    return this.#following && this.#offerTimer !== null && !this.#resuming;
  }

  /** the master we are in step with was fenced, its link up: we wait for it or another one (docs/protocol.md#peers) */
  #suspend(): void {
    if (!this.#suspended) this.#deps.log.info('the master was fenced: waiting in step for it to be elected again (or another master)', { master: this.target.serviceId, epoch: this.view?.epoch });
    this.#deps.replica.pauseInStep();
    this.#suspended = true;
    this.#resuming = false;
    this.#following = false;
    this.#follows++;
    this.#giveUpSync();
    // a long outage (etcd down): the queues here must not wait on the master's settlements for ever
    this.#fencedWait ??= setTimeout(() => {
      this.#fencedWait = null;
      if (!this.#suspended) return;
      this.#deps.log.info('the fenced master was not elected again in time: no longer waiting in step for it', { master: this.target.serviceId, waitedSeconds: FENCED_WAIT_MS / 1000 });
      this.#stopFollowing();
    }, FENCED_WAIT_MS);
    this.#fencedWait.unref();
  }

  #endFencedWait(): void {
    if (this.#fencedWait) clearTimeout(this.#fencedWait);
    this.#fencedWait = null;
  }

  /**
   * Another link follows a master for a sync: what we kept for this fenced one goes, and the
   * frames of a sync we gave up no longer go to the history's catch-up place (that sync brings them)
   */
  anotherFollows(): void {
    this.#endCatchingUp();
    if (this.#suspended || this.#resuming) this.#stopFollowing();
  }

  /** we stop following: the frames of this sync already read still go to the catch-up place, in order */
  #giveUpSync(): void {
    if (this.#sync) this.#gaveUp = this.#sync;
    this.#sync = null;
  }

  /** a new `follow` begins (before it reads its anchors): the sync given up writes no more */
  #endCatchingUp(): void {
    if (this.#gaveUp) this.#gaveUp.catchingUp = false;
    this.#gaveUp = null;
  }

  /** the master's answer to our `follow` with `resume` */
  #resumed(ok: boolean): void {
    if (!this.#resuming || !this.#following) return;
    this.#resuming = false;
    const { log } = this.#deps;
    if (!ok) {
      log.info('the master kept no feed for us since it was fenced: following it for a sync', { master: this.target.serviceId });
      this.#stopFollowing();
      this.refresh();
      return;
    }
    const follow = this.#follows;
    // after the kept feed, sent before the answer, is applied
    void this.#chain(() => {
      if (follow !== this.#follows || !this.#following) return;
      this.#resumes++;
      this.#deps.replica.resumeInStep(this.serviceId, this.view?.epoch);
      // clients' copies held since this broker was fenced or started: after the feed kept for it
      this.#deps.replica.endCatchUp('in step with the master again (its feed resumed)', true);
      this.#peers.inStep(this.view?.epoch);
      log.info('in step with the master again: re-elected, it resumed its feed (no sync)', { master: this.target.serviceId, epoch: this.view?.epoch });
      // nothing to offer after a resumed feed but what the routine offer takes (an offer of copies
      // the master has not read yet from its clients' sockets, after a pause, would go before
      // them: history-pause.test.ts, 330 and 423 records out of send order): a master catching
      // up waits for this end (mirror/promotion-gate.ts)
      this.#offerEnded();
    });
  }

  /**
   * Asks the master to be followed, with the ids of our newest history records per retained
   * channel (from before we fell out of step): its sync then brings the records we lack.
   */
  async #follow(follow: number): Promise<void> {
    const { replica, log } = this.#deps;
    // the anchors below are read after the frames of a sync given up stop being written: what
    // they lack, this follow's catch-up brings
    this.#endCatchingUp();
    let history: FollowHistory[] = [];
    try {
      await replica.historyOutOfStep();
      history = fitFrame(await replica.historyAnchors(FOLLOW_ANCHORS), this.#connection.maxPayloadBytes * 0.9);
    } catch (error) {
      log.error('could not read the history to follow the master: it sends all it keeps', { master: this.target.serviceId, error: (error as Error).message });
    }
    if (follow !== this.#follows || !this.#following || !this.#connection.isReady) return;
    this.#sync = { named: new Set(), catchingUp: true };
    this.#connection.send({ type: 'follow', history });
  }

  #sendAllKeys(): void {
    if (this.#peerTakesKeys) for (const lists of this.#deps.keySync.snapshot()) void this.sendKeys(lists);
  }

  #onFrame(frame: BrokerFrame, bytes: number): void {
    switch (frame.type) {
      case 'peerState':
        if (frame.keys === true && !this.#peerTakesKeys) {
          this.#peerTakesKeys = true;
          this.#sendAllKeys();
        }
        // master all along under a new epoch (its key made again while it held its lease): its feed never stopped
        if (frame.isMaster && this.view?.isMaster && frame.epoch !== undefined && frame.epoch !== this.view.epoch && this.#inStepNow()) this.#peers.inStep(frame.epoch);
        this.view = { configuredMaster: frame.configuredMaster, isMaster: frame.isMaster, ...(frame.epoch !== undefined ? { epoch: frame.epoch } : {}) };
        this.#peerResumes = frame.resumes === true;
        // not master any more: update() below stops following it (or waits in step, fenced)
        this.#peers.update();
        return;
      case 'keys':
        // what the peer had that we lacked, in answer to ours (mirror/key-sync.ts)
        this.#deps.keySync.apply(this.serviceId, frame);
        return;
      case 'sync':
        if (frame.resumed !== undefined) {
          if (!this.#peers.isMaster) this.#resumed(frame.resumed);
          return;
        }
        if (!this.#peers.isMaster) this.#apply(frame, bytes);
        return;
      case 'feed':
        // a master sends these to those that asked, also while it drains at soft-stop
        if (!this.#peers.isMaster) this.#apply(frame, bytes);
        return;
      case 'history':
        this.#applyHistory(frame, bytes);
        return;
      case 'reservations':
        if (!this.#peers.isMaster && this.#following) this.#deps.replica.applyReservations(frame);
        return;
      default:
        return;
    }
  }

  #apply(frame: SyncFrame | FeedFrame, bytes: number): void {
    const { replica, log } = this.#deps;
    const received = this.#backlog.received(frame.messages.length + frame.removed.length + (frame.type === 'feed' ? frame.settled.length : 0), bytes);
    if (frame.type === 'feed') {
      this.#applyFeed(frame, received);
      return;
    }
    // the sync this frame was read in (none: read while in step, or after a sync given up)
    const sync = this.#sync;
    this.#chain(async () => {
      if (sync) {
        for (const m of frame.messages) sync.named.add(m.messageId);
        for (const messageId of frame.removed) sync.named.add(messageId);
      }
      await replica.applyMessages(frame.messages);
      replica.applySettled([], frame.removed);
      // the `done` of a sync given up (read before we stopped following) is not ours to act on
      if (frame.done && sync !== null && sync === this.#sync && this.#following) {
        const follow = this.#follows;
        // the epoch of the master whose sync ends, read now: the link may drop during the awaits
        // below, and its view of the peer with it (atk27e E1: `in step` without an epoch, and
        // no campaign when that master died 200 ms later)
        const epoch = this.view?.epoch;
        const current = (): boolean => follow === this.#follows && this.#following;
        this.#sync = null;
        sync.catchingUp = false;
        // clients' copies held since we fell out of step: queued after what the sync brought (issue 27, B3)
        replica.endCatchUp('in step with the master', true);
        // our own history writes since we fell out of step go after the master's catch-up
        await replica.historyInStep();
        // tracking first: a client message stored while the offer reads bodies is not missed
        if (current()) this.#inStep(epoch);
        await this.#offerHeldOnlyHere(sync.named, epoch, current);
        this.#syncs++;
        if (!current()) {
          this.#syncEndedUnfollowed(epoch);
          return;
        }
        // its epoch as now known: the same, or a new one it was keyed again under meanwhile
        this.#peers.inStep(this.view?.epoch);
        log.info('in step with the master', { master: this.target.serviceId, epoch: this.view?.epoch });
      }
    })
      .catch((error: unknown) => log.error('could not apply what the master sent', { master: this.target.serviceId, error: (error as Error).message }))
      .finally(() => this.#backlog.applied(received));
  }

  /**
   * A feed frame: applied after what came before it, together with the feed frames that arrive
   * meanwhile (a slow store write, or the feed a master kept during our sync, would otherwise
   * cost its writes once per frame, one frame after the other, and fall behind: issue 27,
   * nemesis seed 27). Their messages are stored and written in the history in the feed's order,
   * then their settlements applied in it: a settlement never names a message of a later frame.
   */
  #applyFeed(frame: FeedFrame, received: Unapplied): void {
    const gathering = this.#feedBatch;
    // frames join a batch of the sync they were read in only (each is judged by it), up to
    // FEED_BATCH_ITEMS: a backlog of maxMirrorBacklogBytes is not one long turn of the event loop
    if (gathering && gathering.sync === this.#sync && gathering.items < FEED_BATCH_ITEMS) {
      gathering.items += frame.messages.length + frame.settled.length + frame.removed.length;
      for (const m of frame.messages) gathering.messages.push(m);
      for (const s of frame.settled) gathering.settled.push(s);
      for (const r of frame.removed) gathering.removed.push(r);
      gathering.received.push(received);
      return;
    }
    const { replica, log } = this.#deps;
    const batch: FeedBatch = { sync: this.#sync, messages: [...frame.messages], settled: [...frame.settled], removed: [...frame.removed], received: [received], items: frame.messages.length + frame.settled.length + frame.removed.length };
    this.#chain(async () => {
      if (this.#feedBatch === batch) this.#feedBatch = null;
      const { sync } = batch;
      if (sync && batch.messages.length > 0) {
        // the master's feed of its sync (sent before `done` with a catch-up): named, and
        // written in the history after the catch-up, in its order; also once the sync was
        // given up (the link cut, the master fenced) while its frames read are applied, so
        // the catch-up place ends where they end, without a gap a later sync would not fill
        for (const m of batch.messages) sync.named.add(m.messageId);
        if (sync.catchingUp) await replica.historyFromFeed(batch.messages);
      }
      if (batch.messages.length > 0) await replica.applyMessages(batch.messages);
      replica.applySettled(batch.settled, batch.removed);
    })
      .catch((error: unknown) => log.error('could not apply what the master sent', { master: this.target.serviceId, error: (error as Error).message }))
      .finally(() => {
        for (const each of batch.received) this.#backlog.applied(each);
      });
    // after #chain: what is chained later closes it (a feed frame joins only the last thing chained)
    this.#feedBatch = batch;
  }

  /** runs `step` after everything chained before it; a feed frame received later no longer joins a batch before it */
  #chain(step: () => void | Promise<void>): Promise<void> {
    this.#feedBatch = null;
    const run = this.#applying.then(step);
    this.#applying = run.catch(() => undefined);
    return run;
  }

  /** records of a retained channel we lack, part of the sync: written, then answered (the master waits) */
  #applyHistory(frame: HistoryFrame, bytes: number): void {
    const { replica, log } = this.#deps;
    const received = this.#backlog.received(frame.records.length, bytes);
    const sync = this.#sync;
    // a sync given up before a new follow began: what it brings still goes before our own writes
    this.#chain(() => (this.#peers.isMaster || !sync?.catchingUp ? undefined : replica.applyHistory(frame)))
      .catch((error: unknown) => log.error('could not write the history the master sent', { master: this.target.serviceId, queue: frame.queue, error: (error as Error).message }))
      .finally(() => {
        this.#backlog.applied(received);
        if (this.#connection.isReady) this.#connection.send({ type: 'historyAck', n: frame.n });
      });
  }

  #stopFollowing(): void {
    const wasFollowing = this.#following || this.#suspended;
    if (wasFollowing) this.#deps.replica.followsMaster(false);
    this.#following = false;
    this.#suspended = false;
    this.#resuming = false;
    this.#endFencedWait();
    this.#follows++;
    this.#giveUpSync();
    // out of step: our own history writes wait aside for the next catch-up. After the frames
    // received are applied: the feed places the clients' copies it names, in its order, before
    // the rest of them are written where they arrived (docs/operations.md#history-catch-up)
    if (wasFollowing && !this.#peers.isMaster) {
      const { replica, log } = this.#deps;
      this.#chain(() => (this.#peers.isMaster ? undefined : replica.historyOutOfStep()))
        .catch((error: unknown) => log.error('could not set the history aside', { error: (error as Error).message }));
    }
    if (!this.#offerTimer) return; // not in step with this peer: another link may be
    clearInterval(this.#offerTimer);
    this.#offerTimer = null;
    this.#deps.replica.stopTracking();
  }

  /**
   * The master's sync ended (its frames applied here) but we stopped following it while its end
   * was applied (the link dropped, the master was fenced): its state as of `done` is here, as on
   * a slave in step whose link drops a moment later, so this broker is in step with that
   * master's epoch (it may campaign when that master dies: docs/operations.md#automatic-failover).
   * No stretch in step begins after the drop and nothing is offered (the link is down, or back and
   * not following yet: the next sync offers it)
   */
  #syncEndedUnfollowed(epoch: number | undefined): void {
    // another link follows a master since (of a higher epoch): its own sync says the epoch
    if (this.#peers.followsOther(this)) return;
    this.#peers.inStep(epoch);
    this.#deps.log.info('in step with the master as its sync ended; not following it since (its link lost, or it was fenced)', { master: this.target.serviceId, epoch });
  }

  /** synced: from now on the master's feed names every message it gets */
  #inStep(epoch: number | undefined): void {
    const { replica } = this.#deps;
    replica.startTracking(this.serviceId, epoch);
    this.#offerTimer ??= setInterval(() => {
      // the master fenced (or not answered our resume yet): it would not take an offer
      if (!this.#inStepNow()) return;
      replica.takeUnconfirmed(UNCONFIRMED_AFTER_MS).then(
        (messages) => messages.length > 0 && this.#offer(messages, 'only this broker got from clients', true),
        (error: unknown) => this.#deps.log.error('could not read what to offer the master', { master: this.target.serviceId, error: (error as Error).message }),
      );
    }, 1_000).unref();
  }

  /**
   * After a sync: what we hold that the master did not name and would remember is offered; what
   * it settled and forgot (accepted here in step with it) is forgotten here (docs/protocol.md#peers)
   */
  async #offerHeldOnlyHere(named: ReadonlySet<string>, epoch: number | undefined, following: () => boolean): Promise<void> {
    const { replica, log } = this.#deps;
    const { messages, older, settled } = await replica.heldOnlyHere(named, this.serviceId, epoch);
    if (settled.length > 0) {
      replica.forgetSettled(settled);
      this.#peers.countSettledBySync(settled.length);
      log.info('forgot messages the master did not name, accepted here in step with it and older than the dedupe window: the set settled them', { master: this.target.serviceId, messages: settled.length });
    }
    if (older > 0) log.warn('holding messages the master did not name, older than the dedupe window: kept here, delivered if this broker is promoted', { master: this.target.serviceId, messages: older });
    // the link dropped while the bodies were read: a link back up has not logged in or followed
    // yet, and an offer's end there would let a master catching up go on before our next sync's offer
    if (!following()) return;
    if (messages.length > 0) this.#offer(messages, 'only this broker stored');
    // offered again by the routine offer if the master does not name them: a master fenced for a
    // moment as the offer reached it, then resumed under the same epoch, never took them (atk27f
    // F1: 21-93 sends answered E_NO_MASTER with storedBy lost)
    replica.trackOffered(messages.map((m) => m.messageId));
    this.#offerEnded();
  }

  /** our offer after a sync (or a resumed feed) ends here: a master catching up waits for it (mirror/promotion-gate.ts) */
  #offerEnded(): void {
    if (this.#connection.isReady) this.#connection.send({ type: 'offer', messages: [], last: true });
  }

  /** hands the master messages, in frames its limit takes */
  #offer(messages: readonly PeerMessage[], what: string, routine = false): void {
    const { log } = this.#deps;
    const maxBytes = this.#connection.maxPayloadBytes * 0.9;
    let chunk: PeerMessage[] = [];
    let bytes = 0;
    let skipped = 0;
    for (const message of messages) {
      const size = Buffer.byteLength(JSON.stringify(message));
      if (size > maxBytes) {
        skipped++;
        continue;
      }
      if (bytes + size > maxBytes || chunk.length >= OFFER_CHUNK) {
        this.#connection.send({ type: 'offer', messages: chunk });
        chunk = [];
        bytes = 0;
      }
      chunk.push(message);
      bytes += size;
    }
    if (chunk.length > 0) this.#connection.send({ type: 'offer', messages: chunk });
    const offered = messages.length - skipped;
    this.#peers.countOffered(offered);
    if (skipped > 0) log.warn('messages too large for the peer link were not offered to the master', { master: this.target.serviceId, messages: skipped });
    // a sync's offer matters each time; the routine one (a client's copy ahead of the feed) is a count
    if (routine) {
      this.#offeredSinceLog += offered;
      const now = Date.now();
      if (now - this.#offerLoggedAt < OFFER_LOG_EVERY_MS) return;
      this.#offerLoggedAt = now;
    }
    log.info(`offered the master what ${what}`, { master: this.target.serviceId, messages: routine ? this.#offeredSinceLog : offered, ...(routine ? { sinceSeconds: OFFER_LOG_EVERY_MS / 1000 } : {}) });
    if (routine) this.#offeredSinceLog = 0;
  }
}

/** feed frames applied together (PeerLink.#applyFeed): their parts in the order received, and each frame's place in the backlog */
interface FeedBatch {
  /** the sync its frames were read in */
  readonly sync: Sync | null;
  readonly messages: PeerMessage[];
  readonly settled: PeerSettlement[];
  readonly removed: string[];
  readonly received: Unapplied[];
  /** messages, settlements and removals gathered */
  items: number;
}

/** the anchors a `follow` frame holds within `maxBytes`: channels past it get the master's whole history */
function fitFrame(history: readonly FollowHistory[], maxBytes: number): FollowHistory[] {
  const fitting: FollowHistory[] = [];
  let bytes = 64;
  for (const entry of history) {
    bytes += Buffer.byteLength(JSON.stringify(entry)) + 1;
    if (bytes > maxBytes) break;
    fitting.push(entry);
  }
  return fitting;
}
