/**
 * The parts of one broker started in order (SPEC §10): store, history, router, peers, election,
 * socket server; all closed again if one fails. src/broker/broker.ts owns them once started.
 * The control socket and the management port are claimed before, by src/server/start.ts.
 */
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Config } from '../config/types.js';
import { createLogger, type Logger } from '../runtime/logger.js';
import { type ServiceNotifier, silentNotifier } from '../runtime/notify.js';
import { loadOrCreateKeys } from '../link/keys.js';
import { compilePolicy } from './access/policy.js';
import type { BrokerHooks } from './api.js';
import { Cluster } from './cluster/cluster.js';
import { Mover } from './cluster/move.js';
import { StatsSampler } from './cluster/stats.js';
import type { BrokerOptions } from './embedded.js';
import { History } from './history/history.js';
import { AsideFile } from './messages/aside-file.js';
import { Lifecycle } from './lifecycle.js';
import { Intake } from './messages/intake.js';
import { Router } from './messages/router.js';
import { peerDialOptions } from './mirror/dial.js';
import { mirrorLinkBound, PeerFeed } from './mirror/feed.js';
import { Election } from './mirror/election.js';
import { Peers } from './mirror/peers.js';
import { KeySync } from './mirror/key-sync.js';
import { InStepLog } from './mirror/in-step-log.js';
import { Replica } from './mirror/replica.js';
import { authError, KeyRegistry } from './session/keys.js';
import type { BrokerContext } from './session/ports.js';
import { SocketServer } from './session/server.js';
import { LogStore } from './store/log.js';
import { ReservationFile } from './store/reservation-file.js';
import { heldGroupsFile } from './messages/held-groups.js';
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
  readonly cluster: Cluster | null;
  /** with a cluster: the moves this broker takes part in (`whisker move`, SPEC §13) */
  readonly mover: Mover | null;
  readonly log: Logger;
  readonly notify: ServiceNotifier;
  readonly restored: number; // messages the store gave back, for the `broker started` line
}

/** the store opened, queues rebuilt, peers and election wired, the socket listening; all closed again if one fails */
export async function startParts(config: Config, options: BrokerOptions, hooks: BrokerHooks): Promise<Parts> {
  const policy = compilePolicy(config);
  const log = options.logger ?? createLogger(config.logLevel);
  const now = options.now ?? Date.now;
  const startedAt = now();
  const notify = options.notify ?? silentNotifier;
  mkdirSync(config.dataDirectory, { recursive: true, mode: 0o700 });
  const store = options.store ?? new LogStore(join(config.dataDirectory, 'store'), { dedupeWindowMs: config.dedupeWindow * 1000, log, now });
  const lifecycle = new Lifecycle();
  const history: History = new History(join(config.dataDirectory, 'history'), (queue: string) => router.policy.retention(queue), log, now);
  const reservationFile = new ReservationFile(join(config.dataDirectory, 'reservations.json'), log);
  const groupsFile = heldGroupsFile(join(config.dataDirectory, 'groups.json'), log);
  // a cluster's broker keeps the queues waiting aside for a move's hand-over across a restart
  const asideFile = config.cluster ? new AsideFile(join(config.dataDirectory, 'aside.json'), log) : undefined;
  const router: Router = new Router({ policy, store: hooks.wrapStore ? hooks.wrapStore(store) : store, log, now, lifecycle, history, reservationFile, groupsFile, asideFile });
  let server: SocketServer | undefined;
  let peers: Peers | undefined;
  let replica: Replica | undefined;
  let election: Election | null = null;
  let cluster: Cluster | null = null;
  let mover: Mover | null = null;
  try {
    await history.open();
    // a mirror starts as if it followed its master: its own ttl and drop-oldest wait for the
    // link (or FOLLOW_GRACE_MS without one), so a restart past a ttl keeps the master's in flight
    const mirrored = config.peers.length > 0;
    if (mirrored) router.setFollowsMaster(true);
    const restored = await router.restore();
    // what the set took while this mirror was down comes by a sync or by its peers' offers: its
    // clients' copies wait until then, queued after it (messages/catch-up-hold.ts, issue 27 B3)
    if (mirrored) router.catchUp.begin();
    const replicaOf = new Replica(router, mirrored, mirrored ? new InStepLog(join(config.dataDirectory, 'in-step.json'), now, log) : null);
    replica = replicaOf;
    const feed = new PeerFeed(replicaOf, log, () => mirrorLinkBound(router.policy.config.limits));
    router.observe({ settled: (events) => feed.settled(events), made: (message) => feed.made(message), storedFromClient: (message) => {
        replicaOf.storedFromClient(message);
        feed.storedWhileFenced(message);
      },
      offeredWhileFenced: (message) => feed.storedWhileFenced(message),
    });
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
        backlogBytes: () => router.policy.config.limits.maxMirrorBacklogBytes,
        onRoleChange: (isMaster, epoch) => {
          router.setMaster(isMaster);
          if (!isMaster) feed.demoted();
          mover?.roleChanged();
          const role = { type: 'role', isMaster, ...(epoch !== undefined ? { epoch } : {}) } as const;
          // after the deliveries this broker queued as master: one written after a role frame that
          // says slave was taken as live (a client ignores only a master's frames of an old epoch:
          // election-fencing.test.ts, 10-20 delivered twice after SIGCONT). Dropping them instead
          // left them in flight with no client holding them, delivered again only at the ack
          // timeout or by a move's new set (move.test.ts: a listener's first receptions late)
          for (const session of sessions()) if (session.isReady && !session.isPeer) session.sendAfterDeliveries(role);
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
        onChange: (view) => {
          mirrors.update();
          cluster?.role(view.isMaster, view.epoch);
        },
      });
      mirrors.useElection(election);
      log.warn('election on: the master is elected through etcd, isMaster in the file is not used', { prefix: config.election.prefix, leaseTtl: config.election.leaseTtl });
    }
    if (config.cluster && config.election) {
      const sampler = new StatsSampler();
      cluster = await Cluster.create(config.cluster, config.election, config.serviceId, log, {
        pin: (queue) => router.policy.config.channels[queue]?.set,
        deadLetterOf: (queue) => deadLetterQueue(router.policy.config.channels[queue]?.deadLetter),
        deadLetterSources: (queue) => Object.entries(router.policy.config.channels).filter(([, c]) => deadLetterQueue(c.deadLetter) === queue).map(([source]) => source),
        maxPlacements: () => router.policy.config.limits.maxPlacements,
        stats: () => sampler.sample(now(), router.queues.values()),
        keyUnbound: (name, pem) => {
          // its reserved ids are free for others now (SPEC §5), as after `whisker keys revoke` here
          if (keySync.revokedInCluster(name, pem)) router.reservations.releaseName(name);
        },
        changed: (frames) => {
          const texts = frames.map((frame) => JSON.stringify(frame));
          for (const session of sessions()) if (session.isReady && !session.isPeer) for (const text of texts) session.sendText(text);
        },
      });
      const placed = cluster;
      mover = new Mover(cluster, router, log);
      keys.onRevoked = (name, pem) => placed.unbindKey(name, pem);
      // an idle queue's placement goes with it, decided by the set's master (SPEC §13)
      router.onForgotten((queue) => router.isMaster && placed.forget(queue, () => router.queues.has(queue)));
      log.info('cluster on: queues are placed on mirror sets through etcd', { set: config.cluster.set, prefix: config.cluster.prefix, advertise: config.cluster.advertise });
    }
    const ctx: BrokerContext = {
      get policy() {
        return router.policy;
      },
      router,
      intake: new Intake(router, lifecycle, cluster),
      replica,
      keys,
      peerKeys: new KeyRegistry(join(config.dataDirectory, 'peers')),
      peers,
      keySync,
      feed,
      history,
      cluster,
      log,
    };
    server = new SocketServer(config, ctx, lifecycle);
    // nothing awaits between the bind and the role: no connection is served before peers are configured
    const address = await server.listen(config.socketServer.host, config.socketServer.port);
    peers.configure(config.peers, config.isMaster);
    election?.start();
    cluster?.start();
    return { config, address, startedAt, ctx, store, lifecycle, server, election, cluster, mover, log, notify, restored };
  } catch (error) {
    const closeSockets = server?.close().catch(() => undefined);
    mover?.close();
    await Promise.all([election?.close(), cluster?.close(), peers?.close(), store.close().catch(() => undefined), history.close(), closeSockets]);
    replica?.close();
    throw error;
  }
}

/** `endpoint/version` of a dead-letter channel `endpoint/version/id` */
function deadLetterQueue(channel: string | undefined): string | undefined {
  return channel?.split('/').slice(0, 2).join('/');
}
