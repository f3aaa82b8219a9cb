import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { ConfigError, kittenWarnings, loadConfigFile } from '../config/load.js';
import { keepRestartKeys, restartOnlyChanges } from '../config/restart.js';
import type { Config } from '../config/types.js';
import { type ConfigWatcher, watchConfigFile } from '../config/watch.js';
import { ControlServer, controlSocketPath } from '../ops/control.js';
import { silentNotifier } from '../ops/notify.js';
import { bindManagement, startManagement, type ManagementServer } from '../ops/http.js';
import { createLogger } from '../ops/logger.js';
import { BrokerMetrics } from '../ops/metrics.js';
import { controlHandler, statusLine } from './admin.js';
import { loadOrCreateKeys } from '../link/keys.js';
import { WhiskerError } from '../protocol/errors.js';
import { compilePolicy } from './access/policy.js';
import type { Rules } from './access/rules.js';
import type { Broker, BrokerOptions } from './api.js';
import { History } from './history/history.js';
import { Lifecycle } from './lifecycle.js';
import { Intake } from './messages/intake.js';
import { Router } from './messages/router.js';
import { peerDialOptions } from './mirror/dial.js';
import { PeerFeed } from './mirror/feed.js';
import { Election } from './mirror/election.js';
import { Peers } from './mirror/peers.js';
import { KeySync } from './mirror/key-sync.js';
import { Replica } from './mirror/replica.js';
import { authError, KeyRegistry } from './session/keys.js';
import type { BrokerContext, ConnectedSession } from './session/ports.js';
import { SocketServer } from './session/server.js';
import { LogStore } from './store/log.js';
import { ReservationFile } from './store/reservation-file.js';

export type { Broker, BrokerOptions, ReloadOutcome, ReloadResult } from './api.js';

/** a reload re-checks live subscriptions: ids no longer readable are removed (SPEC §5) */
function recheckSubscriptions(session: ConnectedSession, rules: Rules, router: Router): void {
  for (const subscription of session.subscriptions.values()) {
    const [endpoint, version] = subscription.queue.split('/') as [string, string];
    const lost = [...subscription.ids].filter((id) => !rules.canRead(session.clientName, endpoint, version, id));
    if (lost.length === 0) continue;
    router.unsubscribe(subscription, lost);
    for (const id of lost) {
      const reason = rules.readRefusal(session.clientName, endpoint, version, id) ?? 'no-rule';
      session.send({ type: 'revoked', sub: subscription.sub, ids: [id], error: router.refusals.forbidden(session.clientName, `${subscription.queue}/${id}`, 'read', reason).toJSON() });
    }
  }
}

/** Starts one broker: store loaded, queues rebuilt, socket listening (SPEC §10). */
export async function startBroker(config: Config, options: BrokerOptions = {}): Promise<Broker> {
  const policy = compilePolicy(config);
  const log = options.logger ?? createLogger(config.logLevel);
  const now = options.now ?? Date.now;
  const startedAt = now();
  const notify = options.notify ?? silentNotifier;
  mkdirSync(config.dataDirectory, { recursive: true, mode: 0o700 });
  // before the store opens: a second broker on the same data directory stops here
  const control = options.control === false ? null : await ControlServer.open(controlSocketPath(config.dataDirectory));
  // the ports are bound before anything is claimed: a port in use stops the start with no role announced
  let managementPort: Server | null = null;
  try {
    managementPort = config.management ? await bindManagement(config.management) : null;
  } catch (error) {
    await control?.close();
    throw error;
  }
  const store = options.store ?? new LogStore(join(config.dataDirectory, 'store'), { dedupeWindowMs: config.dedupeWindow * 1000, log, now });
  // appends are timed for the metrics only when something serves them
  const metrics = config.management ? new BrokerMetrics() : null;
  const lifecycle = new Lifecycle();
  const history: History = new History(join(config.dataDirectory, 'history'), (queue: string) => router.policy.retention(queue), log, now);
  const reservationFile = new ReservationFile(join(config.dataDirectory, 'reservations.json'), log);
  const router: Router = new Router({ policy, store: metrics ? metrics.timeAppends(store) : store, log, now, lifecycle, history, reservationFile });
  let restored, ctx: BrokerContext, server: SocketServer | undefined, address;
  let peers: Peers | undefined;
  let election: Election | null = null;
  try {
    await history.open();
    restored = await router.restore();
    const replica = new Replica(router);
    const feed = new PeerFeed(replica, log);
    router.observe({ settled: (events) => feed.settled(events), made: (message) => feed.made(message), storedFromClient: (message) => replica.storedFromClient(message) });
    router.reservations.observe((set, released) => feed.reservationsChanged(set, released));
    const sessions = () => server?.sessions ?? [];
    const keys = new KeyRegistry(config.registeredClientsPath);
    const keySync = new KeySync({
      registry: keys,
      log,
      isMaster: () => router.isMaster,
      delivers: (serviceId) => peers?.delivers(serviceId) ?? false,
      links: () => peers?.links() ?? [],
      closeSessions: (name, key) => {
        let closed = 0;
        for (const session of [...sessions()]) {
          if (!session.isReady || session.isPeer || session.clientName !== name || !session.key?.equals(key)) continue;
          session.fail(authError('revoked', `The key of ${name} was revoked`));
          closed++;
        }
        // a name left without a key (a mirror's revocation): its reserved ids are free (SPEC §5)
        if (!keys.registered(name)) router.reservations.releaseName(name);
        return closed;
      },
    });
    peers = new Peers(
      {
        serviceId: config.serviceId,
        keys: loadOrCreateKeys(config.keysDirectory, config.keysName),
        dialOptions: () => peerDialOptions(router.policy.config),
        replica,
        keySync,
        log,
        onRoleChange: (isMaster, epoch) => {
          router.setMaster(isMaster);
          if (!isMaster) feed.demoted();
          const role = { type: 'role', isMaster, ...(epoch !== undefined ? { epoch } : {}) } as const;
          for (const session of sessions()) if (session.isReady && !session.isPeer) session.send(role);
        },
        followers: () => feed.followers(),
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
    const peerKeys = new KeyRegistry(join(config.dataDirectory, 'peers'));
    ctx = {
      get policy() {
        return router.policy;
      },
      router,
      intake: new Intake(router, lifecycle),
      replica,
      keys,
      peerKeys,
      peers,
      keySync,
      feed,
      history,
      log,
    };
    server = new SocketServer(config, ctx, lifecycle);
    // nothing awaits between the bind and the role: no connection is served before peers are configured
    address = await server.listen(config.socketServer.host, config.socketServer.port);
    peers.configure(config.peers, config.isMaster);
    election?.start();
  } catch (error) {
    const closeSockets = server?.close().catch(() => undefined);
    const closeManagement = new Promise<void>((resolve) => (managementPort ? managementPort.close(() => resolve()) : resolve()));
    await Promise.all([election?.close(), peers?.close(), store.close().catch(() => undefined), history.close(), control?.close(), closeSockets, closeManagement]);
    throw error;
  }
  const scheme = config.socketServer.tls ? 'wss' : 'ws';
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  const socketServer = server;
  let stopped: Promise<void> | null = null;
  let softStopped: Promise<void> | null = null;
  let reloadFailures = 0;
  let lastReloadError: string | null = null;
  let watcher: ConfigWatcher | null = null;
  let closed!: (error: Error | null) => void;
  const whenClosed = new Promise<Error | null>((resolve) => (closed = resolve));
  let management: ManagementServer | null = null;
  const broker: Broker = {
    host: address.address,
    port: address.port,
    url: `${scheme}://${host}:${address.port}`,
    get config() {
      return ctx.policy.config;
    },
    router,
    history,
    peers: ctx.peers,
    get election() {
      return election?.view() ?? null;
    },
    stepDown() {
      if (!election) return Promise.resolve({ ok: false, error: 'no election: this broker runs without an election block' });
      const drained = async () => {
        router.holdDeliveries(true);
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, ctx.policy.config.softStopTimeout * 1000)));
        await Promise.race([router.whenIdle(), timedOut]);
        clearTimeout(timer);
      };
      return election.stepDown(drained).finally(() => router.holdDeliveries(false));
    },
    sessions: socketServer.sessions,
    publish: (clientName, messages) => ctx.intake.publish(clientName, messages),
    get managementPort() {
      return management?.port ?? null;
    },
    startedAt,
    get state() {
      return lifecycle.state;
    },
    get isStopping() {
      return lifecycle.isStopping;
    },
    get isStoreHealthy() {
      return store.isHealthy();
    },
    get reloadFailures() {
      return reloadFailures;
    },
    get lastReloadError() {
      return lastReloadError;
    },
    controlSocketPath: control?.path ?? null,
    closed: whenClosed,
    reload(loaded: Config) {
      const running = ctx.policy.config;
      const restartNeeded = restartOnlyChanges(running, loaded);
      const next = keepRestartKeys(running, loaded);
      const nextPolicy = compilePolicy(next);
      // a `.pub` removed or replaced by hand is a revocation, and it spreads (docs/security.md#keys)
      ctx.keySync.reloaded(ctx.keys.forget());
      log.setLevel(next.logLevel);
      router.applyPolicy(nextPolicy);
      for (const session of [...socketServer.sessions]) {
        // a peer logged in with the peers' registry, not the clients': its rights are `peers` alone
        if (!session.isReady || session.isPeer) continue;
        if (!ctx.keys.stillValid(session.clientName, session.key!)) {
          ctx.keys.revoke(session.clientName, session.key!);
          router.reservations.releaseName(session.clientName);
          session.fail(authError('revoked', 'Key revoked'));
          continue;
        }
        recheckSubscriptions(session, nextPolicy.rules, router);
      }
      // after the rules: a promoted slave delivers under the new ones
      ctx.peers.configure(next.peers, next.isMaster);
      // a broker no longer in `peers` loses its link to us; its key is kept, never revoked (SPEC §9)
      for (const session of [...socketServer.sessions]) {
        if (session.isReady && session.isPeer && !ctx.peers.isPeer(session.clientName)) session.fail(new WhiskerError('E_AUTH', 'No longer one of this broker\'s peers'));
      }
      log.info('config reloaded', { isMaster: next.isMaster, acting: router.isMaster ? 'master' : 'slave', restartNeeded });
      if (next.election) log.warn('election on: the master is elected through etcd, isMaster in the file is not used', { prefix: next.election.prefix });
      if (restartNeeded.length > 0) log.warn('config keys changed that apply only after a restart', { keys: restartNeeded });
      const warnings = kittenWarnings(loaded);
      for (const warning of warnings) log.warn(warning);
      return { restartNeeded, warnings };
    },
    reloadFromFile() {
      const path = ctx.policy.config.configPath;
      if (!path) return { ok: false, error: 'the broker runs the built-in default (no -c): there is no file to reload' };
      if (lifecycle.isStopping) return { ok: false, error: 'the broker is stopping' };
      notify.reloading();
      try {
        return { ok: true, ...broker.reload(loadConfigFile(path)) };
      } catch (error) {
        reloadFailures++;
        lastReloadError = (error as Error).message;
        const key = error instanceof ConfigError ? error.key : undefined;
        log.error('config refused, the running one stays', { path, error: lastReloadError, ...(key ? { key } : {}) });
        return { ok: false, error: lastReloadError, ...(key ? { key } : {}) };
      } finally {
        notify.ready(statusLine(broker));
      }
    },
    softStop() {
      softStopped ??= (async () => {
        // connections, sends and new deliveries refused; peers count this broker a master no more
        if (!lifecycle.enter('draining')) return broker.stop();
        notify.stopping();
        const { softStopTimeout } = ctx.policy.config;
        log.info('soft stop: connections and sends refused, waiting for deliveries in flight', { inFlight: router.inFlightCount, softStopTimeout });
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, softStopTimeout * 1000)));
        let unobserve = () => {};
        const stoppedMeanwhile = new Promise<void>((resolve) => (unobserve = lifecycle.observe((state) => state === 'stopping' && resolve())));
        await Promise.race([router.whenIdle(), timedOut, stoppedMeanwhile]);
        clearTimeout(timer);
        unobserve();
        const left = router.inFlightCount;
        if (left > 0) log.warn('soft stop timed out: stopping with deliveries in flight, delivered again after a restart', { inFlight: left });
        await broker.stop();
      })();
      return softStopped;
    },
    stop() {
      if (lifecycle.state === 'running') notify.stopping();
      lifecycle.enter('stopping');
      stopped ??= (async () => {
        try {
          await management?.close();
          metrics?.close();
          await watcher?.close();
          await election?.close(); // gives the lease up: another broker is elected at once
          await ctx.peers.close();
          await socketServer.close();
          router.close();
          await router.reservations.close();
          await store.close();
          await history.close();
          // last, so `whisker soft-stop` sees its connection close once everything is written
          await control?.close();
          lifecycle.enter('stopped');
          log.info('broker stopped', { serviceId: ctx.policy.config.serviceId });
          closed(null);
        } catch (error) {
          log.error('stop failed', { error: (error as Error).message });
          await control?.close().catch(() => undefined);
          closed(error as Error);
          throw error;
        }
      })();
      return stopped;
    },
  };
  if (config.management && metrics) {
    try {
      management = await startManagement(broker, config.management, { metrics, log, now, ...(managementPort ? { bound: managementPort } : {}) });
    } catch (error) {
      await broker.stop();
      throw error;
    }
  }
  if (config.configPath && options.watch !== false) {
    const onError = (error: Error) => log.error('config file watch failed', { path: config.configPath, error: error.message });
    try {
      watcher = await watchConfigFile(config.configPath, () => broker.reloadFromFile(), onError);
    } catch (error) {
      await broker.stop();
      throw error;
    }
  }
  control?.handle(controlHandler(broker, ctx.keys, ctx.keySync, log));
  // once everything listens: tests and operators wait for this line's url
  // the role it acts in now: with an election, a slave until it holds the lease (SPEC §9)
  log.info('broker started', { serviceId: config.serviceId, isMaster: router.isMaster, url: broker.url, restored });
  notify.ready(statusLine(broker));
  notify.startWatchdog(() => statusLine(broker));
  return broker;
}
