/**
 * The parts of one broker started in order (SPEC §10): control socket (the data directory's
 * lock), store, history, router, peers, election, socket server; all closed again if one fails.
 * src/broker/broker.ts owns them once started.
 */
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Config } from '../config/types.js';
import { ControlServer, controlSocketPath } from '../ops/control.js';
import { BrokerMetrics } from '../ops/metrics.js';
import { createLogger, type Logger } from '../runtime/logger.js';
import { type ServiceNotifier, silentNotifier } from '../runtime/notify.js';
import { loadOrCreateKeys } from '../link/keys.js';
import { compilePolicy } from './access/policy.js';
import type { BrokerOptions } from './embedded.js';
import { History } from './history/history.js';
import { Lifecycle } from './lifecycle.js';
import { Intake } from './messages/intake.js';
import { Router } from './messages/router.js';
import { peerDialOptions } from './mirror/dial.js';
import { PeerFeed } from './mirror/feed.js';
import { Election } from './mirror/election.js';
import { Peers } from './mirror/peers.js';
import { Replica } from './mirror/replica.js';
import { KeyRegistry } from './session/keys.js';
import type { BrokerContext } from './session/ports.js';
import { SocketServer } from './session/server.js';
import { LogStore } from './store/log.js';
import { ReservationFile } from './store/reservation-file.js';
import type { MessageStore } from './store/store.js';

/** the parts `Broker.start` made, each handed to its one owner */
export interface Parts {
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

/** the store opened, queues rebuilt, peers and election wired, the socket listening; all closed again if one fails */
export async function startParts(config: Config, options: BrokerOptions): Promise<Parts> {
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

