import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/types.js';
import { createLogger, type Logger } from '../ops/logger.js';
import { KeyRegistry } from './auth.js';
import type { BrokerContext } from './context.js';
import { compilePolicy } from './policy.js';
import type { Rules } from './rules.js';
import { WhiskerError } from '../protocol/errors.js';
import { Router } from './router.js';
import { SocketServer } from './server.js';
import type { Session } from './session.js';
import { LogStore } from './store/log.js';
import type { MessageStore } from './store/store.js';

export interface BrokerOptions {
  /** defaults to the durable log store in `dataDirectory/store` */
  store?: MessageStore;
  logger?: Logger;
  now?: () => number;
}

export interface Broker {
  readonly host: string;
  /** the port actually bound (useful with port 0) */
  readonly port: number;
  readonly url: string;
  readonly config: Config;
  readonly router: Router;
  readonly sessions: ReadonlySet<Session>;
  /** swaps in a new config (validated and compiled first); throws and keeps the old one if bad */
  reload(config: Config): void;
  stop(): Promise<void>;
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
  mkdirSync(config.dataDirectory, { recursive: true, mode: 0o700 });
  const store = options.store ?? new LogStore(join(config.dataDirectory, 'store'), { dedupeWindowMs: config.dedupeWindow * 1000, log, now });
  const router = new Router(policy, store, log, now);
  const restored = await router.restore();
  const ctx: BrokerContext = { policy, router, keys: new KeyRegistry(config.registeredClientsPath), log, sessions: new Set() };
  const server = new SocketServer(config, ctx);
  const address = await server.listen(config.socketServer.host, config.socketServer.port);
  const scheme = config.socketServer.tls ? 'wss' : 'ws';
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  // accepted so a config written for a later version still loads; say plainly that nothing serves them
  if (config.management) log.warn('config key "management" is accepted but not served by this version');
  if (config.peers.length > 0) log.warn('config key "peers" is accepted but not used by this version');
  log.info('broker started', { serviceId: config.serviceId, isMaster: config.isMaster, url: `${scheme}://${host}:${address.port}`, restored });

  let stopped: Promise<void> | null = null;
  return {
    host: address.address,
    port: address.port,
    url: `${scheme}://${host}:${address.port}`,
    get config() {
      return ctx.policy.config;
    },
    router,
    sessions: ctx.sessions,
    reload(next: Config) {
      const nextPolicy = compilePolicy(next);
      const roleChanged = next.isMaster !== ctx.policy.config.isMaster;
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
        recheckSubscriptions(session, nextPolicy.rules, router);
        if (roleChanged) session.send({ type: 'role', isMaster: next.isMaster });
      }
      log.info('config reloaded', { isMaster: next.isMaster });
    },
    stop() {
      stopped ??= (async () => {
        await server.close();
        router.close();
        await store.close();
        log.info('broker stopped', { serviceId: ctx.policy.config.serviceId });
      })();
      return stopped;
    },
  };
}
