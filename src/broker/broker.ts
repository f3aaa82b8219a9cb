import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfigFile } from '../config/load.js';
import { keepRestartKeys, restartOnlyChanges } from '../config/restart.js';
import type { Config } from '../config/types.js';
import { type ConfigWatcher, watchConfigFile } from '../config/watch.js';
import { ControlServer, controlSocketPath } from '../ops/control.js';
import { type ServiceNotifier, silentNotifier } from '../ops/notify.js';
import { startManagement, type ManagementServer } from '../ops/http.js';
import { createLogger, type Logger } from '../ops/logger.js';
import { BrokerMetrics } from '../ops/metrics.js';
import { controlHandler, statusLine } from './admin.js';
import { KeyRegistry } from './session/keys.js';
import { loadOrCreateKeys } from '../link/keys.js';
import { PeerFeed } from './mirror/feed.js';
import { Peers } from './mirror/peers.js';
import type { BrokerContext } from './session/context.js';
import { compilePolicy } from './access/policy.js';
import type { Rules } from './access/rules.js';
import { WhiskerError } from '../protocol/errors.js';
import { Router } from './messages/router.js';
import { SocketServer } from './session/server.js';
import type { Session } from './session/session.js';
import { LogStore } from './store/log.js';
import type { MessageStore } from './store/store.js';

export interface BrokerOptions {
  /** defaults to the durable log store in `dataDirectory/store` */
  store?: MessageStore;
  logger?: Logger;
  now?: () => number;
  /** systemd notifications (src/ops/notify.ts); none by default */
  notify?: ServiceNotifier;
  /** the control socket in `dataDirectory` (default true) */
  control?: boolean;
  /** reload when the config file changes (default true; only for a config read from a file) */
  watch?: boolean;
}

export interface ReloadResult {
  /** changed keys that apply only after a restart (docs/operations.md#what-a-reload-applies) */
  readonly restartNeeded: string[];
}

/** what `reloadFromFile()` gives SIGHUP, the watcher and `whisker reload`: it never throws */
export type ReloadOutcome = ({ readonly ok: true } & ReloadResult) | { readonly ok: false; readonly error: string; readonly key?: string };

export interface Broker {
  readonly host: string;
  /** the port actually bound (useful with port 0) */
  readonly port: number;
  readonly url: string;
  readonly config: Config;
  readonly router: Router;
  readonly sessions: ReadonlySet<Session>;
  /** the management HTTP port actually bound, or null without a `management` block */
  readonly managementPort: number | null;
  /** ms since the epoch, from the broker's clock */
  readonly startedAt: number;
  /** true from the start of a soft or hard stop: /health answers 503 (docs/management.md#health) */
  readonly isStopping: boolean;
  readonly isStoreHealthy: boolean;
  /** reloads from the config file refused since start, and the last reason */
  readonly reloadFailures: number;
  readonly lastReloadError: string | null;
  /** the mirror brokers in `peers`, and the role this broker acts in because of them */
  readonly peers: Peers;
  /** null when started with `control: false` */
  readonly controlSocketPath: string | null;
  /** resolves once the broker has stopped, whoever asked (a signal, `whisker stop`): with what failed, or null */
  readonly closed: Promise<Error | null>;
  /** swaps in a new config (validated and compiled first); throws and keeps the old one if bad */
  reload(config: Config): ReloadResult;
  /** reads the config file again and reloads it, or keeps the running config and counts the failure */
  reloadFromFile(): ReloadOutcome;
  /** SPEC §9: refuse connections and sends, let deliveries in flight finish (up to softStopTimeout), stop */
  softStop(): Promise<void>;
  /** at once: connections closed, what is in flight is delivered again after a restart; the store is closed cleanly */
  stop(): Promise<void>;
}

const SOFT_STOP_POLL_MS = 20;

/** resolves with the deliveries still in flight when none is left, `deadline` passed or `gaveUp()` */
async function inFlightSettled(router: Router, deadline: number, gaveUp: () => boolean): Promise<number> {
  while (router.inFlightCount > 0 && Date.now() < deadline && !gaveUp()) {
    await new Promise((resolve) => setTimeout(resolve, SOFT_STOP_POLL_MS));
  }
  return router.inFlightCount;
}

/** a reload re-checks live subscriptions: ids no longer readable are removed (SPEC §5) */
function recheckSubscriptions(session: Session, rules: Rules, router: Router): void {
  for (const subscription of session.subscriptions.values()) {
    const [endpoint, version] = subscription.queue.split('/') as [string, string];
    const lost = [...subscription.ids].filter((id) => !rules.canRead(session.clientName, endpoint, version, id));
    if (lost.length === 0) continue;
    router.unsubscribe(subscription, lost);
    session.send({ type: 'revoked', sub: subscription.sub, ids: lost, error: new WhiskerError('E_FORBIDDEN', 'Not allowed').toJSON() });
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
  const store = options.store ?? new LogStore(join(config.dataDirectory, 'store'), { dedupeWindowMs: config.dedupeWindow * 1000, log, now });
  // appends are timed for the metrics only when something serves them
  const metrics = config.management ? new BrokerMetrics() : null;
  const router = new Router(policy, metrics ? metrics.timeAppends(store) : store, log, now);
  let restored, ctx: BrokerContext, server: SocketServer, address;
  let peers: Peers | undefined;
  try {
    restored = await router.restore();
    const sessions = new Set<Session>();
    const feed = new PeerFeed(router, log);
    peers = new Peers({
      serviceId: config.serviceId,
      keys: loadOrCreateKeys(config.keysDirectory, config.keysName),
      router,
      log,
      onRoleChange: (isMaster) => {
        router.setMaster(isMaster);
        if (!isMaster) feed.demoted();
        for (const session of sessions) if (session.isReady && !session.isPeer) session.send({ type: 'role', isMaster });
      },
      onStateChange: (state) => {
        for (const session of sessions) if (session.isReady && session.isPeer) session.send(state);
      },
    });
    const peerKeys = new KeyRegistry(join(config.dataDirectory, 'peers'));
    ctx = { policy, router, keys: new KeyRegistry(config.registeredClientsPath), peerKeys, peers, feed, log, sessions };
    peers.configure(config.peers, config.isMaster);
    server = new SocketServer(config, ctx);
    address = await server.listen(config.socketServer.host, config.socketServer.port);
  } catch (error) {
    await Promise.all([peers?.close(), store.close().catch(() => undefined), control?.close()]);
    throw error;
  }
  const scheme = config.socketServer.tls ? 'wss' : 'ws';
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  let stopped: Promise<void> | null = null;
  let softStopped: Promise<void> | null = null;
  let stopping = false;
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
    peers: ctx.peers,
    sessions: ctx.sessions,
    get managementPort() {
      return management?.port ?? null;
    },
    startedAt,
    get isStopping() {
      return stopping || router.isRefusingSends;
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
      ctx.policy = nextPolicy;
      ctx.keys.forget();
      log.setLevel(next.logLevel);
      router.applyPolicy(nextPolicy);
      for (const session of [...ctx.sessions]) {
        if (!session.isReady) continue;
        if (!ctx.keys.stillValid(session.clientName, session.key!)) {
          ctx.keys.revoke(session.clientName, session.key!);
          session.fail(new WhiskerError('E_AUTH', 'Key revoked'));
          continue;
        }
        if (!session.isPeer) recheckSubscriptions(session, nextPolicy.rules, router);
      }
      // after the rules: a promoted slave delivers under the new ones
      ctx.peers.configure(next.peers, next.isMaster);
      log.info('config reloaded', { isMaster: next.isMaster, acting: router.isMaster ? 'master' : 'slave', restartNeeded });
      if (restartNeeded.length > 0) log.warn('config keys changed that apply only after a restart', { keys: restartNeeded });
      return { restartNeeded };
    },
    reloadFromFile() {
      const path = ctx.policy.config.configPath;
      if (!path) return { ok: false, error: 'the broker runs the built-in default (no -c): there is no file to reload' };
      if (stopping) return { ok: false, error: 'the broker is stopping' };
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
        if (stopping) return broker.stop();
        stopping = true;
        notify.stopping();
        server.refuseConnections();
        router.drain();
        ctx.peers.stopping();
        const { softStopTimeout } = ctx.policy.config;
        log.info('soft stop: connections and sends refused, waiting for deliveries in flight', { inFlight: router.inFlightCount, softStopTimeout });
        const left = await inFlightSettled(router, Date.now() + softStopTimeout * 1000, () => stopped !== null);
        if (left > 0) log.warn('soft stop timed out: stopping with deliveries in flight, delivered again after a restart', { inFlight: left });
        await broker.stop();
      })();
      return softStopped;
    },
    stop() {
      if (!stopping) notify.stopping();
      stopping = true;
      stopped ??= (async () => {
        try {
          await management?.close();
          metrics?.close();
          await watcher?.close();
          await ctx.peers.close();
          await server.close();
          router.close();
          await store.close();
          // last, so `whisker soft-stop` sees its connection close once everything is written
          await control?.close();
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
      management = await startManagement(broker, config.management, { metrics, log, now });
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
  control?.handle(controlHandler(broker, ctx));
  // once everything listens: tests and operators wait for this line's url
  log.info('broker started', { serviceId: config.serviceId, isMaster: config.isMaster, url: broker.url, restored });
  notify.ready(statusLine(broker));
  notify.startWatchdog(() => statusLine(broker));
  return broker;
}
