import { type HostTarget, parseHost } from '../../link/hosts.js';
import type { PeerStateFrame } from '../../protocol/frames.js';
import type { Lifecycle } from '../lifecycle.js';
import { PeerLink } from './peer-link.js';
import { PromotionGate } from './promotion-gate.js';
import type { ElectedRole, FollowerState, LinkDeps, LinkOwner, MasterConflict, PeersOptions, PeerStatus, PeerView } from './types.js';

export type { MasterConflict, PeerStatus } from './types.js';

/**
 * The mirror brokers this one knows (SPEC §9): a link to each peer in `peers`, what role each
 * plays, and so the role this broker acts in. Configured master is not enough: of two
 * masters that see each other, the one with the higher serviceId yields and follows the other.
 * A slave follows the master: its `sync`, then its `feed` of settlements (docs/protocol.md#peers).
 */
export class Peers implements LinkOwner {
  readonly #options: PeersOptions;
  readonly #links = new Map<string, PeerLink>();
  /** links peers opened to us, by link: a peer may have a new one before the old one closed */
  readonly #incoming = new Map<object, PeerView & { serviceId: string }>();
  #configuredMaster = false;
  #stopping = false;
  #isMaster = false;
  #conflict: MasterConflict | null = null;
  #told = '';
  #offeredToMaster = 0;
  #settledBySync = 0;
  /** with an election, it decides the role instead of `isMaster` (mirror/election.ts) */
  #election: ElectedRole | null = null;
  #inStepEpoch: number | null = null;
  #toldEpoch: number | undefined;
  /** master while catching up: clients' copies wait for the peers' offers (issue 27, B3) */
  readonly #gate: PromotionGate;

  readonly #deps: LinkDeps;

  constructor(options: PeersOptions, lifecycle: Lifecycle) {
    this.#options = options;
    const { serviceId, keys, log, replica, dialOptions, keySync, backlogBytes } = options;
    this.#deps = { serviceId, keys, log, replica, dialOptions, keySync, backlogBytes };
    this.#gate = new PromotionGate(log, (reason) => replica.endCatchUp(reason));
    // soft-stop: this broker delivers nothing new, so its peers no longer count it as a master
    // (a slave promoted meanwhile does not yield to it); its in-flight deliveries still finish here
    lifecycle.observe(() => {
      if (lifecycle.isStopping && !this.#stopping) {
        this.#stopping = true;
        this.update();
      }
    });
  }

  get isMaster(): boolean {
    return this.#isMaster;
  }

  get configuredMaster(): boolean {
    return this.#configuredMaster;
  }

  /** messages this broker offered a master since start (docs/protocol.md#peers) */
  get offeredToMaster(): number {
    return this.#offeredToMaster;
  }

  countOffered(messages: number): void {
    this.#offeredToMaster += messages;
  }

  /** messages a sync showed settled by the set, forgotten here since start (issue 27) */
  get settledBySync(): number {
    return this.#settledBySync;
  }

  countSettledBySync(messages: number): void {
    this.#settledBySync += messages;
  }

  get epoch(): number | undefined {
    return this.#election?.epoch ?? undefined;
  }

  /** the epoch of the master whose sync this broker finished last */
  get inStepEpoch(): number | null {
    return this.#inStepEpoch;
  }

  inStep(epoch: number | undefined): void {
    this.#inStepEpoch = epoch ?? null;
  }

  /** this peer's offer after its sync (or resumed feed) is stored here (session/handlers/peer.ts) */
  offerEnded(serviceId: string): void {
    this.#gate.done(serviceId);
  }

  /** our link to this peer went down (or a dial of it failed): a master does not wait for its offer */
  linkDown(serviceId: string): void {
    this.#gate.done(serviceId);
  }

  /** from now on the election decides the role (broker.ts, at start) */
  useElection(election: ElectedRole): void {
    this.#election = election;
  }

  /**
   * Before a client's or peer's frame is handled: a master whose lease lapsed while this process
   * was paused (SIGSTOP, a long turn) is fenced now, not at its fence timer, which the event loop
   * runs after the frames read in the same turn (SPEC §9, issue 27)
   */
  judgeFence(): void {
    this.#election?.judgeFence();
  }

  get conflict(): MasterConflict | null {
    return this.#conflict;
  }

  isPeer(serviceId: string): boolean {
    return this.#links.has(serviceId);
  }

  /**
   * `link` starts following its peer for a sync: the others' kept feeds (a fenced master's) are
   * given up, and the frames of syncs they gave up are no longer written as catch-up (mirror/peer-link.ts)
   */
  followStarted(link: object): void {
    for (const other of this.#links.values()) if (other !== link) other.anotherFollows();
  }

  /** does a link other than `link` follow its peer (another master: a fenced one is not waited for then) */
  followsOther(link: object): boolean {
    for (const other of this.#links.values()) if (other !== link && other.following) return true;
    return false;
  }

  /** the links to every configured peer (key spreading, mirror/key-sync.ts) */
  links(): Iterable<PeerLink> {
    return this.#links.values();
  }

  /**
   * Settles once every link applied the frames it received until now: the records a slave got
   * from its master before it was promoted are then in its history (session/handlers/replay.ts).
   * Bounded: a master applies no new `sync` or `feed`, and each link reads at most
   * limits.maxMirrorBacklogBytes ahead of what it applied
   */
  applied(): Promise<void> {
    return Promise.all([...this.#links.values()].map((link) => link.applied())).then(() => undefined);
  }

  /** does that peer act as master, as last heard over either link? */
  delivers(serviceId: string): boolean {
    if (this.#links.get(serviceId)?.view?.isMaster) return true;
    return [...this.#incoming.values()].some((view) => view.serviceId === serviceId && view.isMaster);
  }

  /** what this broker tells its peers about itself: a broker stopping counts as a master no more */
  state(): PeerStateFrame {
    const leaving = this.#stopping;
    const claims = this.#election ? this.#election.isMaster : this.#configuredMaster;
    const epoch = this.epoch;
    return { type: 'peerState', serviceId: this.#options.serviceId, configuredMaster: claims && !leaving, isMaster: this.#isMaster && !leaving, ...(epoch !== undefined ? { epoch } : {}), keys: true, ...(leaving ? {} : { resumes: true as const }) };
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
        const link = new PeerLink(target, this, this.#deps);
        this.#links.set(serviceId, link);
        link.start();
      }
    }
    this.#configuredMaster = configuredMaster;
    this.update();
  }

  /** a peer that dialed us told its role (undefined: its link closed) */
  observeIncoming(link: object, serviceId: string, view: PeerView | undefined): void {
    if (view) this.#incoming.set(link, { ...view, serviceId });
    else this.#incoming.delete(link);
    this.update();
  }

  status(): PeerStatus[] {
    const followers = this.#options.followers?.() ?? new Map<string, FollowerState>();
    return [...this.#links.values()].map((link) => {
      const status = link.status();
      const follows = followers.get(status.serviceId);
      return { ...status, followsUs: follows === undefined ? null : follows.inStep ? 'in step' : 'syncing', owedBytes: follows?.owedBytes ?? 0 };
    });
  }

  /** why this broker cannot be trusted as a mirror right now, null when it can (SPEC §9 health) */
  degradedReason(): string | null {
    const conflict = this.#conflict;
    if (conflict) return `${conflict.masters.join(' and ')} are all configured as master: ${conflict.delivering} delivers`;
    if (this.#isMaster || this.#stopping) return null;
    const peers = this.status();
    if (peers.some((peer) => peer.inStep)) return null;
    if (peers.length === 0) return 'a slave without peers: it follows no master';
    const master = peers.find((peer) => peer.role === 'master');
    if (master) return `not in step with the master ${master.serviceId}: ${master.following ? 'its sync is under way' : 'not following it'}`;
    const reached = peers.filter((peer) => peer.connected).map((peer) => peer.serviceId);
    return `not in step with a master: none of its peers acts as master (${reached.length > 0 ? `reached: ${reached.join(', ')}` : 'none reached'})`;
  }

  async close(): Promise<void> {
    const links = [...this.#links.values()];
    this.#links.clear();
    await Promise.all(links.map((link) => link.close()));
  }

  /** recomputes the role: called whenever anything it depends on changed */
  update(): void {
    const isMaster = this.#election ? this.#electedRole(this.#election) : this.#configuredRole();
    const epoch = this.epoch;
    if (isMaster !== this.#isMaster || epoch !== this.#toldEpoch) {
      if (isMaster !== this.#isMaster) {
        this.#options.log.info(isMaster ? 'delivering: this broker acts as master' : 'not delivering: this broker acts as slave', { configuredMaster: this.#configuredMaster, epoch });
      }
      const wasMaster = this.#isMaster;
      this.#isMaster = isMaster;
      this.#toldEpoch = epoch;
      this.#options.onRoleChange(isMaster, epoch);
      // a master fenced (or in conflict) no longer knows what its mirrors take: it catches up again
      if (wasMaster && !isMaster && this.#links.size > 0) {
        this.#gate.cancel();
        // its hold released (or ended by a sync) before: a new catch-up, the whole bound again
        if (!this.#deps.replica.catchingUp) this.#gate.reset();
        this.#deps.replica.beginCatchUp();
      }
      // master while catching up: its clients' copies wait for every configured peer's offer (one
      // that cannot be reached drops out at its link's next failure, a frozen one at the bound)
      if (isMaster && !wasMaster && this.#deps.replica.catchingUp) this.#gate.hold(this.#links.keys());
    }
    const state = this.state();
    const told = JSON.stringify(state);
    if (told !== this.#told) {
      this.#told = told;
      this.#options.onStateChange(state);
    }
    for (const link of this.#links.values()) link.refresh();
  }

  /** elected: a peer announcing a master of a higher epoch fences this one at once */
  #electedRole(election: ElectedRole): boolean {
    const views: Array<PeerView & { serviceId: string }> = [...this.#incoming.values()];
    for (const [serviceId, link] of this.#links) if (link.view) views.push({ ...link.view, serviceId });
    for (const view of views) {
      if (view.isMaster && view.epoch !== undefined && view.epoch > (election.epoch ?? 0)) election.fenced(view.epoch, view.serviceId);
    }
    // at soft-stop it stays master for the acks of what is in flight; state() tells peers it leaves
    return election.isMaster;
  }

  #configuredRole(): boolean {
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
    return this.#configuredMaster && (!conflict || conflict.delivering === this.#options.serviceId);
  }
}

