import type { Server } from 'node:http';
import type { Config } from '../config/types.js';
import { type ConfigWatcher, watchConfigFile } from '../config/watch.js';
import type { ControlServer } from '../ops/control.js';
import { startManagement, type ManagementServer } from '../ops/http.js';
import type { BrokerMetrics } from '../ops/metrics.js';
import type { Logger } from '../runtime/logger.js';
import type { ServiceNotifier } from '../runtime/notify.js';
import { controlHandler, statusLine } from './admin.js';
import type { PublishedMessage, PublishResult } from '../protocol/frames.js';
import type { Broker as BrokerView, BrokerOptions, QueueView, ReloadOutcome, ReloadResult } from './api.js';
import type { History } from './history/history.js';
import type { Lifecycle } from './lifecycle.js';
import type { Router } from './messages/router.js';
import type { Cluster } from './cluster/cluster.js';
import type { Election } from './mirror/election.js';
import type { Peers } from './mirror/peers.js';
import type { ElectionView } from './mirror/types.js';
import { type Parts, startParts } from './parts.js';
import { Reloader } from './reload.js';
import type { BrokerContext, ConnectedSession } from './session/ports.js';
import type { SocketServer } from './session/server.js';
import type { MessageStore, StoredMessage } from './store/store.js';

export type { BrokerOptions, ReloadOutcome, ReloadResult } from './api.js';

/**
 * One running broker (SPEC §10): it owns its lifecycle, store, socket server, election, control
 * socket and management server, and stops them in order. Reload is src/broker/reload.ts.
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
  readonly #control: ControlServer | null;
  readonly #metrics: BrokerMetrics | null;
  readonly #managementPort: Server | null;
  readonly #log: Logger;
  readonly #notify: ServiceNotifier;
  readonly #reloader: Reloader;
  readonly #restored: number;
  readonly #closed: (error: Error | null) => void;
  #management: ManagementServer | null = null;
  #watcher: ConfigWatcher | null = null;
  #stopped: Promise<void> | null = null;
  #softStopped: Promise<void> | null = null;

  /** startBroker's: the parts started, then management, watcher and control attached */
  static async start(config: Config, options: BrokerOptions = {}): Promise<Broker> {
    const broker = new Broker(await startParts(config, options));
    await broker.#attach(options);
    return broker;
  }

  private constructor(parts: Parts) {
    const { address, ctx } = parts;
    const scheme = parts.config.socketServer.tls ? 'wss' : 'ws';
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    this.host = address.address;
    this.port = address.port;
    this.url = `${scheme}://${host}:${address.port}`;
    this.startedAt = parts.startedAt;
    this.controlSocketPath = parts.control?.path ?? null;
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
    this.#control = parts.control;
    this.#metrics = parts.metrics;
    this.#managementPort = parts.managementPort;
    this.#log = parts.log;
    this.#notify = parts.notify;
    this.#restored = parts.restored;
    let closed!: (error: Error | null) => void;
    this.closed = new Promise<Error | null>((resolve) => (closed = resolve));
    this.#closed = closed;
    this.#reloader = new Reloader({ router: ctx.router, keys: ctx.keys, keySync: ctx.keySync, peers: ctx.peers, sessions: parts.server.sessions, lifecycle: parts.lifecycle, log: parts.log, notify: parts.notify, status: () => statusLine(this) });
  }

  /** management, the config watcher and the control socket's commands, once the broker runs */
  async #attach(options: BrokerOptions): Promise<void> {
    const [config, log] = [this.config, this.#log];
    if (config.management && this.#metrics) {
      try {
        this.#management = await startManagement(this, config.management, { metrics: this.#metrics, log, now: options.now ?? Date.now, ...(this.#managementPort ? { bound: this.#managementPort } : {}) });
      } catch (error) {
        await this.stop();
        throw error;
      }
    }
    if (config.configPath && options.watch !== false) {
      const onError = (error: Error) => log.error('config file watch failed', { path: config.configPath, error: error.message });
      try {
        this.#watcher = await watchConfigFile(config.configPath, () => this.reloadFromFile(), onError);
      } catch (error) {
        await this.stop();
        throw error;
      }
    }
    this.#control?.handle(controlHandler(this, this.#ctx.keys, this.#ctx.keySync, log));
    // once everything listens: tests and operators wait for this line's url
    // the role it acts in now: with an election, a slave until it holds the lease (SPEC §9)
    log.info('broker started', { serviceId: config.serviceId, isMaster: this.router.isMaster, url: this.url, restored: this.#restored });
    this.#notify.ready(statusLine(this));
    this.#notify.startWatchdog(() => statusLine(this));
  }

  get config(): Config {
    return this.#ctx.policy.config;
  }

  get election(): ElectionView | null {
    return this.#election?.view() ?? null;
  }

  /** with a `cluster` block: sets, brokers and placements as this broker knows them (SPEC §13) */
  get cluster(): ReturnType<Cluster['view']> | null {
    return this.#cluster?.view() ?? null;
  }

  get managementPort(): number | null {
    return this.#management?.port ?? null;
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
    const control = this.#control;
    try {
      await this.#management?.close();
      this.#metrics?.close();
      await this.#watcher?.close();
      await this.#election?.close(); // gives the lease up: another broker is elected at once
      await this.#cluster?.close(); // leaves the set's members at once
      await this.peers.close();
      await this.#server.close();
      this.router.close();
      await this.router.reservations.close();
      await this.#store.close();
      await this.history.close();
      // last, so `whisker soft-stop` sees its connection close once everything is written
      await control?.close();
      this.#lifecycle.enter('stopped');
      this.#log.info('broker stopped', { serviceId: this.config.serviceId });
      this.#closed(null);
    } catch (error) {
      this.#log.error('stop failed', { error: (error as Error).message });
      await control?.close().catch(() => undefined);
      this.#closed(error as Error);
      throw error;
    }
  }
}

/** Starts one broker: store loaded, queues rebuilt, socket listening (SPEC §10). */
export function startBroker(config: Config, options: BrokerOptions = {}): Promise<Broker> {
  return Broker.start(config, options);
}
