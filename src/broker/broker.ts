import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Config } from '../config/types.js';
import { type ConfigWatcher, watchConfigFile } from '../config/watch.js';
import { ControlServer, controlSocketPath } from '../ops/control.js';
import { startManagement, type ManagementServer } from '../ops/http.js';
import { BrokerMetrics } from '../ops/metrics.js';
import { createLogger, type Logger } from '../runtime/logger.js';
import { type ServiceNotifier, silentNotifier } from '../runtime/notify.js';
import { controlHandler, statusLine } from './admin.js';
import { loadOrCreateKeys } from '../link/keys.js';
import type { PublishedMessage, PublishResult } from '../protocol/frames.js';
import { compilePolicy } from './access/policy.js';
import type { Broker as BrokerView, BrokerOptions, ReloadOutcome, ReloadResult } from './api.js';
import { History } from './history/history.js';
import { Lifecycle } from './lifecycle.js';
import { Intake } from './messages/intake.js';
import { Router } from './messages/router.js';
import { peerDialOptions } from './mirror/dial.js';
import { PeerFeed } from './mirror/feed.js';
import { Election } from './mirror/election.js';
import { Peers } from './mirror/peers.js';
import { Replica } from './mirror/replica.js';
import type { ElectionView } from './mirror/types.js';
import { Reloader } from './reload.js';
import { KeyRegistry } from './session/keys.js';
import type { BrokerContext, ConnectedSession } from './session/ports.js';
import { SocketServer } from './session/server.js';
import { LogStore } from './store/log.js';
import { ReservationFile } from './store/reservation-file.js';
import type { MessageStore } from './store/store.js';

export type { BrokerOptions, ReloadOutcome, ReloadResult } from './api.js';

/** the parts `Broker.start` made, each handed to its one owner */
interface Parts {
  readonly config: Config;
  readonly address: AddressInfo;
  readonly startedAt: number;
  readonly ctx: BrokerContext;
  readonly store: MessageStore;
  readonly lifecycle: Lifecycle;
  readonly server: SocketServer;
  readonly election: Election | null;
  readonly control: ControlServer | null;
  readonly metrics: BrokerMetrics | null;
  readonly log: Logger;
  readonly notify: ServiceNotifier;
  readonly restored: number; // messages the store gave back, for the `broker started` line
}

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
  readonly #control: ControlServer | null;
  readonly #metrics: BrokerMetrics | null;
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
    this.#control = parts.control;
    this.#metrics = parts.metrics;
    this.#log = parts.log;
    this.#notify = parts.notify;
    this.#restored = parts.restored;
    let closed!: (error: Error | null) => void;
    this.closed = new Promise<Error | null>((resolve) => (closed = resolve));
    this.#closed = closed;
    this.#reloader = new Reloader({ router: ctx.router, keys: ctx.keys, peers: ctx.peers, sessions: parts.server.sessions, lifecycle: parts.lifecycle, log: parts.log, notify: parts.notify, status: () => statusLine(this) });
  }

  /** management, the config watcher and the control socket's commands, once the broker runs */
  async #attach(options: BrokerOptions): Promise<void> {
    const [config, log] = [this.config, this.#log];
    if (config.management && this.#metrics) {
      try {
        this.#management = await startManagement(this, config.management, { metrics: this.#metrics, log, now: options.now ?? Date.now });
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
    this.#control?.handle(controlHandler(this, this.#ctx.keys, log));
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

/** the store opened, queues rebuilt, peers and election wired, the socket listening; all closed again if one fails */
async function startParts(config: Config, options: BrokerOptions): Promise<Parts> {
  const policy = compilePolicy(config);
  const log = options.logger ?? createLogger(config.logLevel);
  const now = options.now ?? Date.now;
  const startedAt = now();
  const notify = options.notify ?? silentNotifier;
  mkdirSync(config.dataDirectory, { recursive: true, mode: 0o700 });
  // before the store opens: a second broker on the same data directory stops here
  const control = options.control === false ? null : await ControlServer.open(controlSocketPath(config.dataDirectory));
  const store = options.store ?? new LogStore(join(config.dataDirectory, 'store'), { dedupeWindowMs: config.dedupeWindow * 1000, log, now });
  // appends are timed for the metrics only when something serves them
  const metrics = config.management ? new BrokerMetrics() : null;
  const lifecycle = new Lifecycle();
  const history: History = new History(join(config.dataDirectory, 'history'), (queue: string) => router.policy.retention(queue), log, now);
  const reservationFile = new ReservationFile(join(config.dataDirectory, 'reservations.json'), log);
  const router: Router = new Router({ policy, store: metrics ? metrics.timeAppends(store) : store, log, now, lifecycle, history, reservationFile });
  let server: SocketServer | undefined;
  let peers: Peers | undefined;
  let election: Election | null = null;
  try {
    await history.open();
    const restored = await router.restore();
    const replica = new Replica(router);
    const feed = new PeerFeed(replica, log);
    router.observe({ settled: (events) => feed.settled(events), made: (message) => feed.made(message), storedFromClient: (message) => replica.storedFromClient(message) });
    router.reservations.observe((set, released) => feed.reservationsChanged(set, released));
    const sessions = () => server?.sessions ?? [];
    peers = new Peers(
      {
        serviceId: config.serviceId,
        keys: loadOrCreateKeys(config.keysDirectory, config.keysName),
        dialOptions: () => peerDialOptions(router.policy.config),
        replica,
        log,
        onRoleChange: (isMaster, epoch) => {
          router.setMaster(isMaster);
          if (!isMaster) feed.demoted();
          const role = { type: 'role', isMaster, ...(epoch !== undefined ? { epoch } : {}) } as const;
          for (const session of sessions()) if (session.isReady && !session.isPeer) session.send(role);
        },
        onStateChange: (state) => {
          for (const session of sessions()) if (session.isReady && session.isPeer) session.send(state);
        },
      },
      lifecycle,
    );
    if (config.election) {
      const mirrors = peers;
      election = await Election.create(config.election, config.serviceId, log, {
        inStepWith: () => mirrors.inStepEpoch,
        mayCampaign: () => !lifecycle.isStopping,
        onChange: () => mirrors.update(),
      });
      mirrors.useElection(election);
      log.warn('election on: the master is elected through etcd, isMaster in the file is not used', { prefix: config.election.prefix, leaseTtl: config.election.leaseTtl });
    }
    const ctx: BrokerContext = {
      get policy() {
        return router.policy;
      },
      router,
      intake: new Intake(router, lifecycle),
      replica,
      keys: new KeyRegistry(config.registeredClientsPath),
      peerKeys: new KeyRegistry(join(config.dataDirectory, 'peers')),
      peers,
      feed,
      history,
      log,
    };
    server = new SocketServer(config, ctx, lifecycle);
    peers.configure(config.peers, config.isMaster);
    const address = await server.listen(config.socketServer.host, config.socketServer.port);
    election?.start();
    return { config, address, startedAt, ctx, store, lifecycle, server, election, control, metrics, log, notify, restored };
  } catch (error) {
    await Promise.all([election?.close(), peers?.close(), store.close().catch(() => undefined), history.close(), control?.close()]);
    throw error;
  }
}

/** Starts one broker: store loaded, queues rebuilt, socket listening (SPEC §10). */
export function startBroker(config: Config, options: BrokerOptions = {}): Promise<Broker> {
  return Broker.start(config, options);
}
