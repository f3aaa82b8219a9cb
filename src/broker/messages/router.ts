import { WhiskerError } from '../../protocol/errors.js';
import type { RefusedId } from '../../protocol/frames.js';
import { DedupeWindow } from '../../protocol/dedupe.js';
import type { Logger } from '../../runtime/logger.js';
import type { Policy } from '../access/policy.js';
import type { History } from '../history/history.js';
import type { Lifecycle } from '../lifecycle.js';
import { groupKey } from '../queue/group.js';
import { Queue } from '../queue/queue.js';
import { MessageRows } from '../queue/rows.js';
import type { Subscription } from '../queue/subscription.js';
import type { MessageStore, StoreEvent, StoredMessage } from '../store/store.js';
import { Appends } from './appends.js';
import { DeadLetters } from './dead-letters.js';
import { IdleQueues } from './idle-queues.js';
import { Moving } from './moving.js';
import { Reservations } from './reservations.js';
import { Refusals } from '../access/refusals.js';
import type { ReservationFile, ReservationRecord } from '../store/reservation-file.js';
import type { JsonTableFile } from '../store/json-table-file.js';
import type { AsideFile } from './aside-file.js';
import { CatchUpHold } from './catch-up-hold.js';
import { CatchingUp } from './catching-up.js';
import { type HeldGroup, KeptGroups } from './held-groups.js';

/** what the mirrors learn of this broker's messages (src/broker/mirror/, docs/protocol.md#peers) */
export interface MirrorHooks {
  /** state changes the queues record: a master's feed carries them */
  settled(events: readonly StoreEvent[]): void;
  /** a message this master now holds: accepted from a client, or a dead letter it made */
  made(message: StoredMessage): void;
  /** a slave stored a client's message: its master's feed should name it soon */
  storedFromClient(message: StoredMessage): void;
  /** a peer's offer taken as master, stored once fenced: the kept feed names it, or followers wrote their copies 30 s late (atk27f f1) */
  offeredWhileFenced?(message: StoredMessage): void;
}

export interface RouterOptions {
  readonly policy: Policy;
  readonly store: MessageStore;
  readonly log: Logger;
  readonly now: () => number;
  readonly lifecycle: Lifecycle;
  /** retained channels' history: every message stored is written there too (src/broker/history/) */
  readonly history?: History;
  /** where reserved ids are kept (SPEC §5); none: they last as long as the process */
  readonly reservationFile?: ReservationFile;
  /** where the queues' recipient groups are kept, for a restart to hold them again (held-groups.ts); none: a restart forgets them */
  readonly groupsFile?: JsonTableFile<HeldGroup>;
  /** the queues whose sends wait aside for a move's hand-over (a cluster's broker) */
  readonly asideFile?: AsideFile;
}

/**
 * Why this file is long: the router is the one owner of the queue registry, the message index,
 * dedupe and appends under way, which intake, replica, dead letters and replays all read.
 *
 * The broker's queues (SPEC §7): which queue holds each message, the ids recently settled
 * (dedupe), the appends under way, subscriptions and reserved ids, and the role (only a master
 * delivers). Messages come in through `Intake` (a client) or `Replica` (a master), both by `store`.
 */
export class Router {
  #policy: Policy;
  readonly #store: MessageStore;
  /** the message log and, for retained channels, their history: both durable before an answer */
  readonly #append: (messages: readonly StoredMessage[], fromClient?: boolean) => Promise<void>;
  readonly log: Logger;
  readonly now: () => number;
  readonly #lifecycle: Lifecycle;
  readonly #queues = new Map<string, Queue>();
  /**
   * every waiting message of every queue, a row each, found by its id (queue/rows.ts): one id
   * map for the router and its queues (bounded memory, SPEC §7)
   */
  readonly #rows: MessageRows;
  /**
   * ids of messages no longer held, within the dedupe window of their acceptance: a held id is
   * known by `#rows` (one map entry per waiting message, not two: bounded memory, SPEC §7)
   */
  readonly #dedupe: DedupeWindow;
  /** a number per queue name, the tag of its ids in #dedupe (never removed: one per queue ever seen) */
  readonly #queueTags = new Map<string, number>();
  readonly #appends = new Appends();
  /** who watches messages enter their queues without being a recipient (`whisker tail`) */
  readonly #taps = new Set<(message: StoredMessage) => void>();
  readonly #reservations: Reservations;
  /** E_FORBIDDEN with its reason, and the rate-limited info line about it (SPEC §5) */
  readonly refusals: Refusals;
  readonly #deadLetters: DeadLetters;
  readonly #idleQueues: IdleQueues;
  #forgotten: ((queue: string) => void) | null = null;
  readonly #history: History | undefined;
  readonly #groupsFile: JsonTableFile<HeldGroup> | null;
  readonly #keptGroups: KeptGroups;
  #hooks: MirrorHooks | null = null;
  #isMaster: boolean;
  #followsMaster = false;
  #held = false;
  #seq = 0;
  /** queues moving from or to this set: frozen, sends held aside, hand-overs (SPEC §13, cluster/move.ts) */
  readonly #moving: Moving;
  /** clients' copies stored while this mirror catches up, queued after what the catch-up brings (catch-up-hold.ts) */
  readonly #hold = new CatchUpHold();
  /** when they leave the hold (catching-up.ts) */
  readonly #catchingUp: CatchingUp;
  /** soft-stop waits for deliveries in flight to end: resolved when none is left */
  #idleWaiters: Array<() => void> = [];

  constructor(options: RouterOptions) {
    const { policy, store } = options;
    this.#policy = policy;
    this.#store = store;
    this.#rows = new MessageRows(store.messageIds);
    this.log = options.log;
    this.now = options.now;
    this.#lifecycle = options.lifecycle;
    // with an election block only the lease makes a master (SPEC §9): a slave from the first
    // second, whatever `isMaster` says; Peers sets the role once etcd has decided (mirror/peers.ts)
    this.#isMaster = policy.config.isMaster && !policy.config.election;
    const history = options.history;
    this.#history = history;
    this.#groupsFile = options.groupsFile ?? null;
    this.#keptGroups = new KeptGroups(this.#groupsFile, () => [...this.#queues.values()].flatMap((queue) => [...queue.groupKeys()].map((group) => ({ queue: queue.name, group }))), () => this.#lifecycle.isStopping);
    this.#append = history ? async (messages, fromClient) => void (await Promise.all([store.append(messages), history.append(messages, fromClient)])) : (messages) => store.append(messages);
    this.#dedupe = new DedupeWindow(policy.config.dedupeWindow * 1000, options.now);
    this.#deadLetters = new DeadLetters({
      append: this.#append,
      readBodies: (ids) => store.readBodies(ids),
      accept: (message) => {
        this.#hooks?.made(message);
        this.#queue(message.queue).accept(message);
      },
      nextSeq: () => this.nextSeq(),
      now: this.now,
      log: this.log,
    });
    this.#lifecycle.observe(() => {
      if (!this.#lifecycle.isStopping) return;
      this.#keptGroups.keepAtStop();
      this.#checkIdle();
    });
    this.refusals = new Refusals(options.log, options.now);
    this.#reservations = new Reservations({
      file: options.reservationFile ?? null,
      log: options.log,
      now: options.now,
      holdSeconds: () => this.#policy.config.reservationHold,
      limit: () => this.#policy.config.limits.maxReservations,
      limitPerName: () => this.#policy.config.limits.maxReservationsPerClient,
    });
    this.#idleQueues = new IdleQueues({ queues: this.#queues, timeoutSeconds: () => this.#policy.config.idleQueueTimeout, now: this.now, forgotten: (name) => this.#forgotten?.(name) });
    this.#catchingUp = new CatchingUp(this.#hold, {
      now: this.now,
      log: this.log,
      isMaster: () => this.#isMaster,
      reserveSeqs: (count) => this.#reserveSeqs(count),
      nextSeq: () => this.nextSeq(),
      historyAsMaster: () => this.#historyRole(true),
      queueHeld: (message, settled, finished, feed) => this.#queueHeld(message, settled, finished, feed),
      recordRemoved: (messageIds) => this.recordRemoved(messageIds),
      namedAside: (messageId, here) => this.#moving.named(messageId, here),
    });
    this.#moving = new Moving({
      queue: (name) => this.#queue(name),
      existing: (name) => this.#queues.get(name),
      deliveringChanged: (name, frozen) => {
        // a queue frozen: what a catch-up holds is queued first, for the export (atk31g F1); freed: not (atk31h run7)
        if (frozen) this.#catchingUp.releaseHeld(`queue ${name} moves`);
        this.#queues.get(name)?.setDelivering(this.#delivers(name));
      },
      holdCopy: (message) => !this.#isMaster && this.#hold.active && this.#holdCopy(message),
      isHeld: (messageId) => this.#rows.find(messageId) >= 0,
      isHeldOrUnderWay: (messageId) => this.#rows.find(messageId) >= 0 || this.#appends.of(messageId) !== undefined || this.#hold.has(messageId),
      storedSoon: (messageId) => (this.#appends.of(messageId) === undefined ? undefined : this.#appends.finished(messageId)),
      notSettled: (messageIds) => {
        for (const messageId of messageIds) if (this.#rows.find(messageId) < 0) this.#dedupe.delete(messageId);
      },
      append: (messages) => this.#append(messages),
      made: (message) => {
        if (this.#isMaster) this.#hooks?.made(message);
      },
      readBodies: (messageIds) => store.readBodies(messageIds),
      nextSeq: () => this.nextSeq(),
      reserveSeqs: (count) => this.#reserveSeqs(count),
      history,
      file: options.asideFile ?? null,
    });
  }

  /** queues moving from or to this set (`whisker move`): cluster/move.ts drives it */
  get moving(): Moving {
    return this.#moving;
  }

  /** a queue delivers on a master, unless a step-down holds deliveries or a move froze it */
  #delivers(queue: string): boolean {
    return this.#isMaster && !this.#held && !this.#moving.isFrozen(queue);
  }

  /** forgets queues idle for idleQueueTimeout now (the sweep does it on its own); returns how many */
  forgetIdleQueues(): number {
    return this.#idleQueues.sweep();
  }

  /**
   * A new queue past limits.maxQueues is refused: clients choose queue names (SPEC §7).
   * `creating`: queues the caller is about to make besides this one.
   */
  checkQueueLimit(creating = 0): void {
    const limit = this.#policy.config.limits.maxQueues;
    if (this.#queues.size + creating >= limit) throw new WhiskerError('E_LIMIT', `Too many queues (limit ${limit})`);
  }

  observe(hooks: MirrorHooks | null): void {
    this.#hooks = hooks;
  }

  /** told each queue the idle sweep forgets (a cluster deletes its placement then, SPEC §13) */
  onForgotten(listener: (queue: string) => void): void {
    this.#forgotten = listener;
  }

  /** reserved ids (SPEC §5): listed and released by the operator, released for a revoked name */
  get reservations(): Reservations {
    return this.#reservations;
  }

  get queues(): ReadonlyMap<string, Queue> {
    return this.#queues;
  }

  get policy(): Policy {
    return this.#policy;
  }

  get isMaster(): boolean {
    return this.#isMaster;
  }

  /** `listener` sees every message as it enters its queue, until the returned function is called */
  tap(listener: (message: StoredMessage) => void): () => void {
    this.#taps.add(listener);
    return () => this.#taps.delete(listener);
  }

  setMaster(isMaster: boolean): void {
    // a master's history is whole; a slave's own writes wait for its master's catch-up (mirror/peer-link.ts)
    if (isMaster !== this.#isMaster) this.#historyRole(isMaster);
    this.#isMaster = isMaster;
    // promoted in step: what waited for the old master to name it is queued, as it arrived
    if (isMaster) this.#catchingUp.promoted();
    // before deliveries start: a subscription on an id another name holds goes first
    this.#evict(this.#reservations.setMaster(isMaster));
    for (const queue of this.#queues.values()) queue.setDelivering(isMaster && !this.#moving.isFrozen(queue.name));
  }

  /** subscriptions on ids another name holds are removed, their clients told (E_FORBIDDEN reserved) */
  #evict(evicted: ReadonlyArray<{ subscription: Subscription; channel: string }>): void {
    for (const { subscription, channel } of evicted) {
      const id = channel.slice(subscription.queue.length + 1);
      this.unsubscribe(subscription, [id]);
      const error = this.refusals.forbidden(subscription.clientName, channel, 'read', 'reserved', this.#reservations.ownerOf(channel));
      subscription.owner.revoked?.(subscription.sub, [id], error);
    }
  }

  /**
   * A move's hand-over of a queue's recipient groups (SPEC §13): each is held here for
   * `groupHold`, as a lost connection's is, so what this set queues before its members subscribe
   * here gets a record in it (a listener name away, or not back on this set yet, gets it later)
   */
  holdGroups(queue: string, keys: readonly string[]): void {
    const holdMs = this.#policy.config.groupHold * 1000;
    if (holdMs <= 0 || keys.length === 0) return;
    const into = this.#queue(queue);
    for (const key of keys) into.holdGroup(key, holdMs);
  }

  /** a move's hand-over of a queue's reservations (owner and hold): they win over what this set gave meanwhile */
  importReservations(records: readonly ReservationRecord[]): void {
    this.#evict(this.#reservations.adopt(records));
  }

  /**
   * This slave follows a master (mirror/peer-link.ts, from its `follow` to the link's end): its
   * queues drop and expire only what the master settles (queue.ts, setFollowsMaster)
   */
  setFollowsMaster(follows: boolean): void {
    this.#followsMaster = follows;
    for (const queue of this.#queues.values()) queue.setFollowsMaster(follows);
  }

  /** `whisker step-down` (mirror/election.ts): no new deliveries, acks still settle those in flight */
  holdDeliveries(held: boolean): void {
    this.#held = held;
    if (!held) this.setMaster(this.#isMaster);
  }

  get isStoreHealthy(): boolean {
    return this.#store.isHealthy();
  }

  nextSeq(): number {
    return ++this.#seq;
  }

  /** `count` seqs set apart (a move's hand-over, a catch-up): returns the one before the first */
  #reserveSeqs(count: number): number {
    const before = this.#seq;
    this.#seq += count;
    return before;
  }

  // ---- messages held --------------------------------------------------------------------

  /** the queue holding this message, if any */
  holding(messageId: string): Queue | undefined {
    const row = this.#rows.find(messageId);
    return row < 0 ? undefined : this.#queues.get(this.#rows.queue(row));
  }

  /** held, or settled within the dedupe window: a copy of it is not queued again (SPEC §7) */
  isKnown(messageId: string): boolean {
    return this.#rows.find(messageId) >= 0 || this.#dedupe.has(messageId) || this.#moving.isAside(messageId) || this.#hold.has(messageId);
  }

  /** settled here within the dedupe window and not held: a copy of it handed back by a move called off is not queued */
  isSettled(messageId: string): boolean {
    return this.#rows.find(messageId) < 0 && this.#dedupe.has(messageId);
  }

  /**
   * A copy of this message arriving later (from a client or a peer) is not queued. An id held
   * already keeps its entry and queue tag (a slave's queue forgot it on its master's settlement
   * just before): a move hands tagged ids over (SPEC §13).
   */
  remember(messageId: string): void {
    if (!this.#dedupe.has(messageId)) this.#dedupe.add(messageId);
  }

  /** `queue`'s ids settled here within the dedupe window, with their acceptance times (a move's hand-over) */
  recentOf(queue: string): Array<[messageId: string, acceptedAt: number]> {
    const tag = this.#queueTags.get(queue);
    return tag === undefined ? [] : [...this.#dedupe.tagged(tag)];
  }

  /** a move's hand-over: these ids of `queue` were settled on the old set; a copy sent here is not queued again */
  importRecent(queue: string, recent: ReadonlyArray<readonly [messageId: string, acceptedAt: number]>): void {
    const tag = this.#queueTag(queue);
    for (const [messageId, acceptedAt] of recent) if (this.#rows.find(messageId) < 0) this.#dedupe.addAt(messageId, acceptedAt, tag);
  }

  #queueTag(queue: string): number {
    let tag = this.#queueTags.get(queue);
    if (tag === undefined) this.#queueTags.set(queue, (tag = this.#queueTags.size + 1));
    return tag;
  }

  /** ids settled within the dedupe window (some held ones may be among them) */
  recentIds(): Iterable<string> {
    return this.#dedupe.ids();
  }

  get dedupeWindowMs(): number {
    return this.#dedupe.windowMs;
  }

  /** the store append under way for this id, if any: a second copy waits for it */
  appendUnderWay(messageId: string): Promise<void> | undefined {
    return this.#appends.of(messageId);
  }

  /** ids whose append is under way now: written (or being written) and not queued yet */
  appendsUnderWay(): Set<string> {
    return new Set(this.#appends.ids());
  }

  /** retained channels' history, if this broker keeps any */
  get history(): History | undefined {
    return this.#history;
  }

  /**
   * Appends the messages, then queues them: rejects when the store refused them. `placed`: their
   * history records are written already (a slave in step writes its master's feed in its order:
   * History.place). Begun on a master, a store not from a client is a peer's offer (its feed names it)
   */
  store(messages: readonly StoredMessage[], fromClient: boolean, placed = false): Promise<void> {
    const append = placed ? (m: readonly StoredMessage[]) => this.#store.append(m) : (m: readonly StoredMessage[]) => this.#append(m, fromClient);
    const offered = !fromClient && this.#isMaster;
    return this.#appends.run(messages, append, () => this.#admit(messages, fromClient, offered));
  }

  /** reads back bodies a queue left on disk, in the order asked */
  readBodies(messageIds: readonly string[]): Promise<unknown[]> {
    return this.#store.readBodies(messageIds);
  }

  /** records that the message is gone for good */
  recordRemoved(messageIds: readonly string[]): void {
    if (messageIds.length > 0) this.#store.record(messageIds.map((messageId) => ({ kind: 'remove', messageId })));
  }

  /** a slave can hear of an ack before the message's own append completed: applied after it */
  whenStored(messageId: string, settle: () => void): void {
    if (!this.#isMaster) this.#appends.afterAdmit(messageId, settle);
  }

  /** Stored: queued, unless a master finished with it while it was written (in the dedupe window: only a replica puts one there then) */
  #admit(messages: readonly StoredMessage[], fromClient: boolean, offered = false): void {
    const finished: string[] = [];
    for (const message of messages) {
      if (this.#rows.find(message.messageId) >= 0) continue;
      if (this.#dedupe.has(message.messageId)) {
        // settled before it was stored here (a slave): now its queue is known, a move hands it over
        this.#dedupe.addAt(message.messageId, message.acceptedAt, this.#queueTag(message.queue));
        finished.push(message.messageId);
        continue;
      }
      const held = fromClient && !this.#moving.isFrozen(message.queue) && !this.#moving.isHeldAside(message.queue) && this.#holdCopy(message);
      // a mirror may not hear it from the client (not reconnected yet): it hears it from us
      if (this.#isMaster) {
        if (!held) this.#hooks?.made(message);
      } else if (fromClient && (!held || !this.#hold.active)) {
        // (in step, held until the master names it: tracked, so it is offered if it never does)
        // held: named when the hold ends (a fenced master's kept feed naming some of them before
        // its release named the older ones put its followers' histories out of order: nemesis
        // seed 27, CI at load 17, 482 records)
        this.#hooks?.storedFromClient(message);
        // a peer's offer taken as master, stored once fenced: the kept feed names it (MirrorHooks)
      } else if (offered) this.#hooks?.offeredWhileFenced?.(message);
      for (const tap of this.#taps) tap(message);
      // a move hands this queue over to this set: it is queued after the hand-over (SPEC §13)
      if (!held && !this.#moving.putAside(message, fromClient)) this.#queue(message.queue).accept(message);
      this.#appends.admitted(message.messageId);
    }
    this.recordRemoved(finished);
  }

  /** a client's copy held while catching up (after what it brings), or until the master names it (false: not holding; #admit asks it only for a queue no move froze or holds aside) */
  #holdCopy(message: StoredMessage): boolean {
    if (!this.#hold.hold(message, this.now())) return false;
    this.#queue(message.queue).waitingForMaster++;
    if (this.#hold.full) this.#catchingUp.end(`${this.#hold.size} clients' messages held: the bound (200,000 or 64 MiB; they are queued where they arrived)`);
    return true;
  }

  // ---- a mirror catching up (catching-up.ts, catch-up-hold.ts) -----------------------------

  /** the catch-up hold's releases (the mirror drives them: mirror/replica.ts, peer-link.ts, peers.ts) */
  get catchUp(): CatchingUp {
    return this.#catchingUp;
  }

  /** runs `then` once every append begun so far is admitted (or failed), before any begun later is */
  afterAdmitted(then: () => void): Promise<void> {
    return this.#appends.inOrder(then);
  }

  /** a held copy enters its queue (false: settled for good meanwhile, already queued, or a move's aside) */
  #queueHeld(message: StoredMessage, settled: readonly string[], finished: string[], feed = true): boolean {
    const waiting = this.#queues.get(message.queue);
    if (waiting && waiting.waitingForMaster > 0) waiting.waitingForMaster--;
    if (this.#rows.find(message.messageId) >= 0) return false;
    if (this.#dedupe.has(message.messageId)) {
      this.#dedupe.addAt(message.messageId, message.acceptedAt, this.#queueTag(message.queue));
      finished.push(message.messageId);
      return false;
    }
    // a master's followers hear of it now, in this order: their histories place it there
    if (this.#isMaster && feed) this.#hooks?.made(message);
    if (this.#moving.putAside(message, true)) return false;
    const queue = this.#queue(message.queue);
    queue.accept(message);
    for (const group of settled) queue.settleFromPeer(message.messageId, group);
    return true;
  }

  async restore(): Promise<number> {
    const { messages, recent } = await this.#store.load();
    for (const { messageId, acceptedAt } of recent) this.#dedupe.addAt(messageId, acceptedAt);
    // a queue moving here when the broker stopped: what it took meanwhile waits aside again, behind the hand-over
    this.#moving.restoreQueues();
    this.#seq = Math.max(this.#seq, this.#moving.reservedUpTo());
    for (const item of messages) {
      this.#seq = Math.max(this.#seq, item.message.seq);
      if (!this.#moving.restoreAside(item.message)) this.#queue(item.message.queue).restore(item);
    }
    // the groups it had before are held again (held-groups.ts): they take what is accepted before their members are back
    const holdMs = this.#policy.config.groupHold * 1000;
    if (holdMs > 0) for (const { queue, group } of this.#groupsFile?.load() ?? []) this.#queue(queue).holdGroup(group, holdMs);
    for (const queue of this.#queues.values()) queue.finishRestore();
    this.#reservations.restore();
    this.#reservations.setMaster(this.#isMaster);
    // the role first: on a slave, what the log holds and the history lacks goes with its own
    // writes, after the records its master's catch-up will bring (docs/operations.md#history-catch-up)
    this.#historyRole(this.#isMaster);
    await this.#recoverHistory(messages.map((m) => m.message), new Set(recent.map((r) => r.messageId)));
    this.#idleQueues.start();
    return messages.length;
  }

  /**
   * A master's history takes its own writes in line; a slave's wait aside for its master's
   * catch-up. A master still catching up places its clients' copies after its peers' offers
   * (the offers name them in their order, as a master's feed does a slave's: History.place)
   */
  #historyRole(isMaster: boolean): void {
    const history = this.#history;
    if (!history) return;
    (isMaster ? history.inStep(this.#hold.active) : history.outOfStep()).catch((error: unknown) => this.log.error('history could not follow the role', { isMaster, error: (error as Error).message }));
  }

  /** every message the log holds is in its channel's history too, whatever stopped the broker (issue 27) */
  async #recoverHistory(held: readonly StoredMessage[], removed: ReadonlySet<string>): Promise<void> {
    const history = this.#history;
    if (!history) return;
    const heldIds = new Set(held.map((m) => m.messageId));
    const missing = await history.recover(held, (id) => heldIds.has(id) || removed.has(id), this.#dedupe.windowMs);
    if (missing.length === 0) return;
    const lacking = missing.filter((m) => m.data === undefined);
    const bodies = lacking.length > 0 ? await this.#store.readBodies(lacking.map((m) => m.messageId)) : [];
    const byId = new Map(lacking.map((m, i) => [m.messageId, bodies[i]]));
    await history.append(missing.map((m) => (m.data === undefined ? { ...m, data: byId.get(m.messageId) } : m)));
  }

  applyPolicy(policy: Policy): void {
    this.#policy = policy;
    this.#dedupe.windowMs = policy.config.dedupeWindow * 1000;
    for (const queue of this.#queues.values()) queue.updateSettings(policy.queueSettings(queue.name));
  }

  // ---- subscriptions -------------------------------------------------------------------

  /** adds ids to a subscription; each refused id comes back with its error (SPEC §5: id by id) */
  subscribe(subscription: Subscription, ids: readonly string[]): RefusedId[] {
    const refused: RefusedId[] = [];
    const [endpoint, version] = subscription.queue.split('/') as [string, string];
    const rules = this.#policy.rules;
    let queue: Queue | undefined;
    if (ids.length > 0 && !this.#queues.has(subscription.queue)) this.checkQueueLimit();
    for (const id of ids) {
      if (subscription.ids.has(id)) continue;
      const channel = `${subscription.queue}/${id}`;
      const reason = rules.readRefusal(subscription.clientName, endpoint, version, id);
      if (reason !== null) {
        refused.push({ id, error: this.refusals.forbidden(subscription.clientName, channel, 'read', reason).toJSON() });
        continue;
      }
      if (rules.isReserved(endpoint, version, id)) {
        let owner: string | undefined;
        try {
          owner = this.#reservations.take(subscription, channel);
        } catch (error) {
          if (!(error instanceof WhiskerError)) throw error;
          refused.push({ id, error: error.toJSON() });
          continue;
        }
        if (owner !== undefined) {
          refused.push({ id, error: this.refusals.forbidden(subscription.clientName, channel, 'read', 'reserved', owner).toJSON() });
          continue;
        }
      }
      subscription.ids.add(id);
      queue ??= this.#queue(subscription.queue);
      queue.subscribe(subscription, id);
    }
    return refused;
  }

  /** the name holding a reserved id when it is not `clientName`: a replay of it is refused too */
  reservedByAnother(clientName: string, queue: string, id: string): string | undefined {
    const [endpoint, version] = queue.split('/') as [string, string];
    if (!this.#policy.rules.isReserved(endpoint, version, id)) return undefined;
    const owner = this.#reservations.ownerOf(`${queue}/${id}`);
    return owner !== undefined && owner !== clientName ? owner : undefined;
  }

  unsubscribe(subscription: Subscription, ids: Iterable<string> = [...subscription.ids]): void {
    this.#leave(subscription, ids, 0);
  }

  /**
   * The subscription's connection was lost (not closed by the client): its groups left without
   * members are kept for groupHold, so what is accepted meanwhile waits for the client's
   * subscriptions again (SPEC §3: it re-registers them on every reconnection; SPEC §7).
   */
  connectionLost(subscription: Subscription): void {
    this.#leave(subscription, [...subscription.ids], this.#policy.config.groupHold * 1000);
  }

  #leave(subscription: Subscription, ids: Iterable<string>, holdMs: number): void {
    const queue = this.#queues.get(subscription.queue);
    for (const id of ids) {
      if (!subscription.ids.delete(id)) continue;
      this.#reservations.left(subscription, `${subscription.queue}/${id}`);
      queue?.unsubscribe(subscription, id, holdMs);
    }
  }

  /** a client's ack or nack: on a slave it may come before the message itself is stored */
  ack(subscription: Subscription, messageId: string, via: string, ok: boolean, delaySeconds: number): void {
    if (!subscription.ids.has(via)) return;
    if (!this.#ackHere(subscription, messageId, via, ok, delaySeconds)) this.whenStored(messageId, () => this.#ackHere(subscription, messageId, via, ok, delaySeconds));
  }

  /**
   * Applied to the queue; a slave's held copy (waiting for its master to name it) keeps an ok for
   * when it is queued: promoted before the master's settlement came, it delivered again what the
   * old master's consumer had acked (election-fencing step-down: 5 twice, CI preview ci22)
   */
  #ackHere(subscription: Subscription, messageId: string, via: string, ok: boolean, delaySeconds: number): boolean {
    if (this.#queues.get(subscription.queue)?.ack(subscription, messageId, via, ok, delaySeconds)) return true;
    if (!this.#hold.has(messageId)) return false;
    if (ok && !this.#isMaster) this.#hold.settle(messageId, groupKey(subscription.mode, subscription.clientName, via));
    return true;
  }

  /** a client extends the ack deadline of a delivery (docs/protocol.md#touch); a slave has none to extend */
  touch(subscription: Subscription, messageId: string, via: string): void {
    this.#queues.get(subscription.queue)?.touch(subscription, messageId, via);
  }

  resume(subscription: Subscription): void {
    this.#queues.get(subscription.queue)?.resume(subscription);
  }

  /**
   * A client's flow limit for one subscription (docs/protocol.md#flow): what it holds stays in
   * flight, nothing new past the limit; a higher one delivers at once. A slave keeps it for
   * when it is promoted.
   */
  flow(subscription: Subscription, limit: number | null): void {
    subscription.limit = limit ?? Infinity;
    this.resume(subscription);
  }

  // ---- deliveries in flight ------------------------------------------------------------

  /** deliveries handed out and not yet acked, nacked or timed out, over every queue */
  get inFlightCount(): number {
    let count = 0;
    for (const queue of this.#queues.values()) count += queue.inFlightCount;
    return count;
  }

  /** resolves once no delivery is in flight (soft-stop, SPEC §9) */
  whenIdle(): Promise<void> {
    if (this.inFlightCount === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #checkIdle(): void {
    if (this.#idleWaiters.length === 0 || this.inFlightCount > 0) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  close(): void {
    void this.#reservations.close();
    this.#idleQueues.stop();
    for (const queue of this.#queues.values()) queue.close();
  }

  /** the groups as they were when the stop began are on disk (Broker.stop waits for it) */
  groupsKept(): Promise<void> {
    return this.#keptGroups.kept();
  }

  #queue(name: string): Queue {
    let queue = this.#queues.get(name);
    if (!queue) {
      queue = new Queue(name, this.#policy.queueSettings(name), {
        now: this.now,
        store: this.#store,
        recorded: (events) => this.#hooks?.settled(events),
        warn: (msg, fields) => this.log.warn(msg, fields),
        discard: (target, message, group, nbDeliveries, reason) => {
          if (target) this.#deadLetters.send(target, message, group, nbDeliveries, reason);
          else this.log.warn('message dropped after its last delivery', { queue: message.queue, messageId: message.messageId, group, nbDeliveries, reason });
        },
        isDraining: () => this.#lifecycle.isStopping || this.#held,
        rows: this.#rows,
        bodyWindow: this.#policy.config.memoryWindow,
        forgotten: (messageId, acceptedAt) => {
          // a copy arriving within the window of its acceptance is still not queued again (tagged with
          // its queue: a move hands them over, SPEC §13)
          this.#dedupe.addAt(messageId, acceptedAt, this.#queueTag(name));
        },
        flightEnded: () => this.#checkIdle(),
        groupsChanged: () => this.#keptGroups.changed(),
      });
      queue.setDelivering(this.#isMaster && !this.#moving.isFrozen(name));
      queue.setFollowsMaster(this.#followsMaster);
      this.#queues.set(name, queue);
    }
    return queue;
  }
}
