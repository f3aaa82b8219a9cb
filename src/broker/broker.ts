import type { Config } from '../config/types.js';
import { type ConfigWatcher, watchConfigFile } from '../config/watch.js';
import type { Logger } from '../runtime/logger.js';
import type { ServiceNotifier } from '../runtime/notify.js';
import type { PublishedMessage, PublishResult } from '../protocol/frames.js';
import type { Broker as BrokerView, BrokerHooks, BrokerOptions, KeyList, QueueView, ReloadOutcome, ReloadResult, ReservationRecord, RevokeOutcome } from './api.js';
import type { History } from './history/history.js';
import type { Lifecycle } from './lifecycle.js';
import type { Router } from './messages/router.js';
import type { Cluster, ClusterView } from './cluster/cluster.js';
import { type Mover, runMove } from './cluster/move.js';
import { listPlacements, type PlacementList, type PlacementQuery } from './cluster/listing.js';
import type { Election } from './mirror/election.js';
import type { Peers } from './mirror/peers.js';
import type { ElectionView } from './mirror/types.js';
import { type Parts, startParts } from './parts.js';
import { Reloader } from './reload.js';
import type { BrokerContext, ConnectedSession } from './session/ports.js';
import type { SocketServer } from './session/server.js';
import type { MessageStore, StoredMessage } from './store/store.js';

export type { BrokerHooks, BrokerOptions, ReloadOutcome, ReloadResult } from './api.js';

/**
 * One running broker (SPEC §10): it owns its lifecycle, store, socket server and election, and
 * stops them in order. Reload is src/broker/reload.ts. What runs beside it (control socket,
 * management HTTP, metrics) hangs on its hooks: src/server/start.ts starts the two together.
 */
export class Broker implements BrokerView {
  readonly host: string;
  readonly port: number;
  readonly url: string;
  readonly startedAt: number;
  readonly controlSocketPath: string | null;
  readonly closed: Promise<Error | null>;
  readonly router: Router;
  readonly history: History;
  readonly peers: Peers;
  readonly sessions: ReadonlySet<ConnectedSession>;
  readonly #ctx: BrokerContext;
  readonly #store: MessageStore;
  readonly #lifecycle: Lifecycle;
  readonly #server: SocketServer;
  readonly #election: Election | null;
  readonly #cluster: Cluster | null;
  readonly #mover: Mover | null;
  readonly #hooks: BrokerHooks;
  readonly #log: Logger;
  readonly #notify: ServiceNotifier;
  readonly #reloader: Reloader;
  readonly #restored: number;
  readonly #closed: (error: Error | null) => void;
  #watcher: ConfigWatcher | null = null;
  #stopped: Promise<void> | null = null;
  #softStopped: Promise<void> | null = null;

  /** the parts started, then the hooks' attach and the config watcher; src/server/start.ts's startBroker adds ops/ */
  static async start(config: Config, options: BrokerOptions = {}, hooks: BrokerHooks = {}): Promise<Broker> {
    const broker = new Broker(await startParts(config, options, hooks), hooks);
    await broker.#attach(options);
    return broker;
  }

  private constructor(parts: Parts, hooks: BrokerHooks) {
    const { address, ctx } = parts;
    const scheme = parts.config.socketServer.tls ? 'wss' : 'ws';
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    this.host = address.address;
    this.port = address.port;
    this.url = `${scheme}://${host}:${address.port}`;
    this.startedAt = parts.startedAt;
    this.controlSocketPath = hooks.controlSocketPath ?? null;
    this.router = ctx.router;
    this.history = ctx.history;
    this.peers = ctx.peers;
    this.sessions = parts.server.sessions;
    this.#ctx = ctx;
    this.#store = parts.store;
    this.#lifecycle = parts.lifecycle;
    this.#server = parts.server;
    this.#election = parts.election;
    this.#cluster = parts.cluster;
    this.#mover = parts.mover;
    this.#hooks = hooks;
    this.#log = parts.log;
    this.#notify = parts.notify;
    this.#restored = parts.restored;
    let closed!: (error: Error | null) => void;
    this.closed = new Promise<Error | null>((resolve) => (closed = resolve));
    this.#closed = closed;
    this.#reloader = new Reloader({ router: ctx.router, keys: ctx.keys, keySync: ctx.keySync, peers: ctx.peers, sessions: parts.server.sessions, lifecycle: parts.lifecycle, log: parts.log, notify: parts.notify, status: () => this.#statusLine() });
  }

  /** what the hooks attach (management, the control socket's commands) and the config watcher, once the broker runs */
  async #attach(options: BrokerOptions): Promise<void> {
    const [config, log] = [this.config, this.#log];
    try {
      await this.#hooks.attach?.(this);
      if (config.configPath && options.watch !== false) {
        const onError = (error: Error) => log.error('config file watch failed', { path: config.configPath, error: error.message });
        this.#watcher = await watchConfigFile(config.configPath, () => this.reloadFromFile(), onError);
      }
    } catch (error) {
      await this.stop();
      throw error;
    }
    // once everything listens: tests and operators wait for this line's url
    // the role it acts in now: with an election, a slave until it holds the lease (SPEC §9)
    log.info('broker started', { serviceId: config.serviceId, isMaster: this.router.isMaster, url: this.url, restored: this.#restored });
    this.#notify.ready(this.#statusLine());
    this.#notify.startWatchdog(() => this.#statusLine());
  }

  /** the systemd STATUS= line: at start, after a reload, with each watchdog ping */
  #statusLine(): string {
    let waiting = 0;
    for (const queue of this.router.queues.values()) waiting += queue.depth;
    const clients = [...this.sessions].filter((s) => s.isReady).length;
    return `${this.isMaster ? 'master' : 'slave'} ${this.config.serviceId}: ${clients} clients, ${this.router.queues.size} queues, ${waiting} waiting, ${this.inFlightCount} in flight`;
  }

  get config(): Config {
    return this.#ctx.policy.config;
  }

  get election(): ElectionView | null {
    return this.#election?.view() ?? null;
  }

  /** with a `cluster` block: sets, brokers and placements as this broker knows them (SPEC §13) */
  get cluster(): ClusterView | null {
    return this.#cluster?.view() ?? null;
  }

  /** `whisker move` (SPEC §13): resolves once `queue` is on set `to`; `progress` hears each phase */
  moveQueue(queue: string, to: string, progress: (phase: string) => void, timeoutMs: number): Promise<{ from: string; to: string }> {
    if (!this.#cluster) return Promise.reject(new Error('this broker runs without a cluster block'));
    return runMove(this.#cluster, queue, to, progress, timeoutMs);
  }

  /** with a `cluster` block: which queue is on which set, the first `limit` by name (SPEC §13), else null */
  clusterPlacements(query: PlacementQuery): PlacementList | null {
    return this.#cluster ? listPlacements(this.#cluster.placementEntries(), query) : null;
  }

  get managementPort(): number | null {
    return this.#hooks.managementPort?.() ?? null;
  }

  get state() {
    return this.#lifecycle.state;
  }

  get isStopping(): boolean {
    return this.#lifecycle.isStopping;
  }

  get isStoreHealthy(): boolean {
    return this.#store.isHealthy();
  }

  get reloadFailures(): number {
    return this.#reloader.failures;
  }

  get lastReloadError(): string | null {
    return this.#reloader.lastError;
  }

  get queues(): ReadonlyMap<string, QueueView> {
    return this.router.queues;
  }

  get isMaster(): boolean {
    return this.router.isMaster;
  }

  get inFlightCount(): number {
    return this.router.inFlightCount;
  }

  readBodies(messageIds: readonly string[]): Promise<unknown[]> {
    return this.router.readBodies(messageIds);
  }

  tap(listener: (message: StoredMessage) => void): () => void {
    return this.router.tap(listener);
  }

  removeMessage(queue: string, messageId: string): boolean {
    return this.router.queues.get(queue)?.remove(messageId) ?? false;
  }

  purgeQueue(queue: string, id?: string): number {
    return this.router.queues.get(queue)?.purge(id) ?? 0;
  }

  listKeys(): KeyList {
    return this.#ctx.keys.list();
  }

  async revokeKey(name: string): Promise<(RevokeOutcome & { releasedReservations: number }) | null> {
    const outcome = await this.#ctx.keySync.revoke(name);
    // its reserved ids are free for others now (SPEC §5)
    return outcome && { ...outcome, releasedReservations: this.router.reservations.releaseName(name) };
  }

  listReservations(): ReservationRecord[] {
    return this.router.reservations.list();
  }

  releaseReservation(channel: string): ReservationRecord | undefined {
    return this.router.reservations.release(channel);
  }

  publish(clientName: string, messages: readonly PublishedMessage[]): Promise<PublishResult[]> {
    return this.#ctx.intake.publish(clientName, messages);
  }

  stepDown(): Promise<{ ok: boolean; error?: string }> {
    const election = this.#election;
    if (!election) return Promise.resolve({ ok: false, error: 'no election: this broker runs without an election block' });
    const router = this.router;
    const drained = async () => {
      router.holdDeliveries(true);
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.config.softStopTimeout * 1000)));
      await Promise.race([router.whenIdle(), timedOut]);
      clearTimeout(timer);
    };
    return election.stepDown(drained).finally(() => router.holdDeliveries(false));
  }

  reload(loaded: Config): ReloadResult {
    return this.#reloader.apply(loaded);
  }

  reloadFromFile(): ReloadOutcome {
    return this.#reloader.fromFile();
  }

  softStop(): Promise<void> {
    this.#softStopped ??= this.#drainThenStop();
    return this.#softStopped;
  }

  async #drainThenStop(): Promise<void> {
    const [lifecycle, router] = [this.#lifecycle, this.router];
    // connections, sends and new deliveries refused; peers count this broker a master no more
    if (!lifecycle.enter('draining')) return this.stop();
    this.#notify.stopping();
    const { softStopTimeout } = this.config;
    this.#log.info('soft stop: connections and sends refused, waiting for deliveries in flight', { inFlight: router.inFlightCount, softStopTimeout });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, softStopTimeout * 1000)));
    let unobserve = () => {};
    const stoppedMeanwhile = new Promise<void>((resolve) => (unobserve = lifecycle.observe((state) => state === 'stopping' && resolve())));
    await Promise.race([router.whenIdle(), timedOut, stoppedMeanwhile]);
    clearTimeout(timer);
    unobserve();
    const left = router.inFlightCount;
    if (left > 0) this.#log.warn('soft stop timed out: stopping with deliveries in flight, delivered again after a restart', { inFlight: left });
    await this.stop();
  }

  stop(): Promise<void> {
    if (this.#lifecycle.state === 'running') this.#notify.stopping();
    this.#lifecycle.enter('stopping');
    this.#stopped ??= this.#close();
    return this.#stopped;
  }

  async #close(): Promise<void> {
    const hooks = this.#hooks;
    try {
      await hooks.closeFirst?.();
      await this.#watcher?.close();
      await this.#election?.close(); // gives the lease up: another broker is elected at once
      this.#mover?.close();
      await this.#cluster?.close(); // leaves the set's members at once
      await this.peers.close();
      this.#ctx.replica.close(); // the follow grace the links' end started
      await this.#server.close();
      this.router.close();
      await this.router.reservations.close();
      await this.router.groupsKept();
      await this.#store.close();
      await this.history.close();
      // last, so `whisker soft-stop` sees its connection close once everything is written
      await hooks.closeLast?.();
      this.#lifecycle.enter('stopped');
      this.#log.info('broker stopped', { serviceId: this.config.serviceId });
      this.#closed(null);
    } catch (error) {
      this.#log.error('stop failed', { error: (error as Error).message });
      await hooks.closeLast?.().catch(() => undefined);
      this.#closed(error as Error);
      throw error;
    }
  }
}
