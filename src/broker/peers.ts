import { Connection, type ConnectionOwner } from '../client/connection.js';
import { type HostTarget, parseHost } from '../client/hosts.js';
import type { ClientKeys } from '../client/keys.js';
import type { BrokerFrame, FeedFrame, PeerMessage, PeerStateFrame, SyncFrame } from '../protocol/frames.js';
import type { Logger } from '../ops/logger.js';
import type { Router } from './router.js';

/** messages per `offer` frame at most (and under the master's frame limit) */
const OFFER_CHUNK = 1_000;
/** a client message the master's feed has not named after this long never reached the master */
const UNCONFIRMED_AFTER_MS = 2_000;

/** a peer's role as last heard, over our link to it or its link to us */
interface PeerView {
  configuredMaster: boolean;
  isMaster: boolean;
}

export interface MasterConflict {
  /** every broker configured as master that this one can see, itself included */
  readonly masters: readonly string[];
  /** the one that keeps delivering: the lowest serviceId */
  readonly delivering: string;
}

export interface PeerStatus {
  readonly serviceId: string;
  readonly spec: string;
  readonly connected: boolean;
  readonly role: 'master' | 'slave' | 'unknown';
  readonly following: boolean;
}

export interface PeersOptions {
  readonly serviceId: string;
  readonly keys: ClientKeys;
  readonly router: Router;
  readonly log: Logger;
  /** the role this broker acts in changed: tell clients */
  readonly onRoleChange: (isMaster: boolean) => void;
  /** what this broker tells its peers changed: tell the peers that dialed us */
  readonly onStateChange: (state: PeerStateFrame) => void;
}

/**
 * The mirror brokers this one knows (SPEC §9): a link to each peer in `peers`, what role each
 * plays, and so the role this broker acts in. Configured master is not enough: of two
 * masters that see each other, the one with the higher serviceId yields and follows the other.
 * A slave follows the master: its `sync`, then its `feed` of settlements (docs/protocol.md#peers).
 */
export class Peers {
  readonly #options: PeersOptions;
  readonly #links = new Map<string, PeerLink>();
  /** links peers opened to us, by link: a peer may have a new one before the old one closed */
  readonly #incoming = new Map<object, PeerView & { serviceId: string }>();
  #configuredMaster = false;
  #stopping = false;
  #isMaster = false;
  #conflict: MasterConflict | null = null;
  #told = '';

  constructor(options: PeersOptions) {
    this.#options = options;
  }

  get isMaster(): boolean {
    return this.#isMaster;
  }

  get configuredMaster(): boolean {
    return this.#configuredMaster;
  }

  get conflict(): MasterConflict | null {
    return this.#conflict;
  }

  isPeer(serviceId: string): boolean {
    return this.#links.has(serviceId);
  }

  /** what this broker tells its peers about itself: a broker stopping counts as a master no more */
  state(): PeerStateFrame {
    const leaving = this.#stopping;
    return { type: 'peerState', serviceId: this.#options.serviceId, configuredMaster: this.#configuredMaster && !leaving, isMaster: this.#isMaster && !leaving };
  }

  /** at start and at every reload: links follow `peers`, the role follows `isMaster` */
  configure(peers: readonly string[], configuredMaster: boolean): void {
    const wanted = new Map<string, HostTarget>();
    for (const spec of peers) {
      const target = parseHost(spec);
      if (target.serviceId && target.serviceId !== this.#options.serviceId) wanted.set(target.serviceId, target);
    }
    for (const [serviceId, link] of this.#links) {
      if (wanted.get(serviceId)?.spec === link.target.spec) continue;
      void link.close();
      this.#links.delete(serviceId);
    }
    for (const [serviceId, target] of wanted) {
      if (!this.#links.has(serviceId)) {
        const link = new PeerLink(target, this);
        this.#links.set(serviceId, link);
        link.start();
      }
    }
    this.#configuredMaster = configuredMaster;
    this.update();
  }

  /**
   * soft-stop: this broker delivers nothing new, so its peers no longer count it as a master
   * (a slave promoted meanwhile does not yield to it); its in-flight deliveries still finish here
   */
  stopping(): void {
    this.#stopping = true;
    this.update();
  }

  /** a peer that dialed us told its role (undefined: its link closed) */
  observeIncoming(link: object, serviceId: string, view: PeerView | undefined): void {
    if (view) this.#incoming.set(link, { ...view, serviceId });
    else this.#incoming.delete(link);
    this.update();
  }

  status(): PeerStatus[] {
    return [...this.#links.values()].map((link) => link.status());
  }

  async close(): Promise<void> {
    const links = [...this.#links.values()];
    this.#links.clear();
    await Promise.all(links.map((link) => link.close()));
  }

  /** recomputes the role: called whenever anything it depends on changed */
  update(): void {
    const masters = new Set<string>();
    if (this.#configuredMaster && !this.#stopping) masters.add(this.#options.serviceId);
    for (const view of this.#incoming.values()) if (view.configuredMaster) masters.add(view.serviceId);
    for (const [serviceId, link] of this.#links) if (link.view?.configuredMaster) masters.add(serviceId);
    const sorted = [...masters].sort();
    const conflict = sorted.length > 1 && masters.has(this.#options.serviceId) ? { masters: sorted, delivering: sorted[0]! } : null;
    if (JSON.stringify(conflict) !== JSON.stringify(this.#conflict)) {
      if (conflict) this.#options.log.error('two brokers are configured as master: the lowest serviceId keeps delivering', { ...conflict });
      else if (this.#conflict) this.#options.log.warn('master conflict over', { masters: this.#conflict.masters });
      this.#conflict = conflict;
    }
    const isMaster = this.#configuredMaster && (!conflict || conflict.delivering === this.#options.serviceId);
    if (isMaster !== this.#isMaster) {
      this.#isMaster = isMaster;
      this.#options.log.info(isMaster ? 'delivering: this broker acts as master' : 'not delivering: this broker acts as slave', { configuredMaster: this.#configuredMaster });
      this.#options.onRoleChange(isMaster);
    }
    const state = this.state();
    const told = JSON.stringify(state);
    if (told !== this.#told) {
      this.#told = told;
      this.#options.onStateChange(state);
    }
    for (const link of this.#links.values()) link.refresh();
  }

  // ---- for PeerLink ----------------------------------------------------------------------

  get options(): PeersOptions {
    return this.#options;
  }
}

/**
 * Our link to one peer: a client connection that logs in with the broker's key pair as
 * `role: 'peer'`, tells our role, and follows the peer while it is the master.
 */
class PeerLink {
  readonly target: HostTarget;
  readonly #peers: Peers;
  readonly #connection: Connection;
  view: PeerView | null = null;
  #following = false;
  #told = '';
  /** sync and feed frames are applied one after the other: a store append may come between */
  #applying: Promise<void> = Promise.resolve();
  /** the ids the master's current sync named: what we hold beyond them may be ours alone */
  #named: Set<string> | null = null;
  /** while in step with the master: offers what only we got from clients, once a second */
  #offerTimer: NodeJS.Timeout | null = null;

  constructor(target: HostTarget, peers: Peers) {
    this.target = target;
    this.#peers = peers;
    const { serviceId, keys } = peers.options;
    const owner: ConnectionOwner = {
      clientId: serviceId,
      keys,
      role: 'peer',
      tls: undefined,
      reconnect: { initialMs: 200, maxMs: 5_000, factor: 1.5 },
      onReady: () => {
        this.#told = '';
        this.refresh();
      },
      onDown: (_connection, error) => {
        if (error) peers.options.log.warn('peer refused our link', { peer: target.spec, code: error.code, reason: error.message });
        this.view = null;
        this.#stopFollowing();
        peers.update();
      },
      onFrame: (_connection, frame) => this.#onFrame(frame),
    };
    this.#connection = new Connection(target, owner);
  }

  start(): void {
    this.#connection.start();
  }

  close(): Promise<void> {
    this.#stopFollowing();
    return this.#connection.close();
  }

  status(): PeerStatus {
    const role = this.view ? (this.view.isMaster ? 'master' : 'slave') : 'unknown';
    return { serviceId: this.target.serviceId!, spec: this.target.spec, connected: this.#connection.isReady, role, following: this.#following };
  }

  /** tells the peer our role when it changed, and follows it when it is the master and we are not */
  refresh(): void {
    if (!this.#connection.isReady) return;
    const state = this.#peers.state();
    const told = JSON.stringify(state);
    if (told !== this.#told) {
      this.#told = told;
      this.#connection.send(state);
    }
    const shouldFollow = this.view?.isMaster === true && !this.#peers.isMaster;
    if (shouldFollow && !this.#following) {
      this.#following = true;
      this.#connection.send({ type: 'follow' });
    } else if (!shouldFollow) {
      this.#stopFollowing();
    }
  }

  #onFrame(frame: BrokerFrame): void {
    switch (frame.type) {
      case 'peerState':
        this.view = { configuredMaster: frame.configuredMaster, isMaster: frame.isMaster };
        if (!frame.isMaster) this.#stopFollowing();
        this.#peers.update();
        return;
      case 'sync':
      case 'feed':
        // a master sends these to those that asked, also while it drains at soft-stop
        if (!this.#peers.isMaster) this.#apply(frame);
        return;
      default:
        return;
    }
  }

  #apply(frame: SyncFrame | FeedFrame): void {
    const { router, log } = this.#peers.options;
    this.#applying = this.#applying
      .then(async () => {
        if (frame.type === 'sync') {
          const named = (this.#named ??= new Set());
          for (const m of frame.messages) named.add(m.messageId);
          for (const messageId of frame.removed) named.add(messageId);
          await router.applyPeerMessages(frame.messages);
          router.applyPeerSettled([], frame.removed);
          if (frame.done && this.#following) {
            this.#named = null;
            this.#offerHeldOnlyHere(named);
            this.#inStep();
            log.info('in step with the master', { master: this.target.serviceId });
          }
        } else {
          if (frame.messages.length > 0) await router.applyPeerMessages(frame.messages);
          router.applyPeerSettled(frame.settled, frame.removed);
        }
      })
      .catch((error: unknown) => log.error('could not apply what the master sent', { master: this.target.serviceId, error: (error as Error).message }));
  }

  #stopFollowing(): void {
    this.#following = false;
    this.#named = null;
    if (!this.#offerTimer) return; // not in step with this peer: another link may be
    clearInterval(this.#offerTimer);
    this.#offerTimer = null;
    this.#peers.options.router.unconfirmed.stop();
  }

  /** synced: from now on the master's feed names every message it gets */
  #inStep(): void {
    const { router } = this.#peers.options;
    router.unconfirmed.start();
    this.#offerTimer ??= setInterval(() => {
      const messages = router.takeUnconfirmed(UNCONFIRMED_AFTER_MS);
      if (messages.length > 0) this.#offer(messages, 'only this broker got from clients');
    }, 1_000).unref();
  }

  /** after a sync: what we hold that the master did not name and would remember (docs/protocol.md#peers) */
  #offerHeldOnlyHere(named: ReadonlySet<string>): void {
    const { router, log } = this.#peers.options;
    const { messages, older } = router.heldOnlyHere(named);
    if (older > 0) log.warn('holding messages the master did not name, older than the dedupe window: kept here, delivered if this broker is promoted', { master: this.target.serviceId, messages: older });
    if (messages.length > 0) this.#offer(messages, 'only this broker stored');
  }

  /** hands the master messages, in frames its limit takes */
  #offer(messages: readonly PeerMessage[], what: string): void {
    const { log } = this.#peers.options;
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
    log.info(`offered the master what ${what}`, { master: this.target.serviceId, messages: messages.length - skipped, tooLargeForThePeerLink: skipped });
  }
}
