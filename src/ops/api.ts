import type { ClusterView, ElectionView, HistoryStats, PlacementList, PlacementQuery, MasterConflict, PeerStatus, PeerView, QueueSettings } from '../broker/api.js';
import type { Config } from '../config/types.js';
import type { SubscriptionMode } from '../protocol/frames.js';
import { unescapeId } from '../protocol/channel.js';
import type { QueueStats } from './metrics.js';
import type { QueueRates, RateWindow } from './rates.js';

/** what the queue knows a handler by (the broker's `Subscriber`) */
export interface SubscriberLike {
  readonly clientName: string;
  readonly mode: SubscriptionMode;
  readonly prefetch: number;
}

/** One listen or consume handler as the management surface reads it (`Subscription` has these). */
export interface ManagedSubscription extends SubscriberLike {
  readonly sub: number;
  readonly mode: SubscriptionMode;
  readonly queue: string;
  readonly ids: ReadonlySet<string>;
  readonly prefetch: number;
  /** the client's flow limit; Infinity: none */
  readonly limit: number;
  /** deliveries handed to it so far */
  readonly delivered: number;
}

/** One queue as the management surface reads it (`Queue` has these). */
export interface ManagedQueue extends QueueStats {
  readonly settings: QueueSettings;
  listIds(): Map<string, number>;
  /** the broker's own subscriber object: one of the sessions' subscriptions */
  inFlightFor(subscription: SubscriberLike): number;
}

/** One connection as the management surface reads it (`Session` has these). */
export interface ManagedSession {
  readonly clientName: string;
  readonly node: string;
  readonly isReady: boolean;
  /** a mirror broker's link (it follows; it has no subscriptions) */
  readonly isPeer?: boolean;
  readonly subscriptions: ReadonlyMap<number, ManagedSubscription>;
}

/**
 * What the management surface reads of a running broker; the `Broker` object is one. It only
 * reads: soft-stop and the store say what they are doing through `isStopping` and
 * `isStoreHealthy` (docs/management.md#health).
 */
export interface ManagedBroker {
  readonly config: Config;
  readonly queues: ReadonlyMap<string, ManagedQueue>;
  readonly isMaster: boolean;
  readonly sessions: ReadonlySet<ManagedSession>;
  /** ms since the epoch, from the broker's clock */
  readonly startedAt: number;
  readonly isStopping: boolean;
  readonly isStoreHealthy: boolean;
  /** reloads refused since start, when the broker counts them */
  readonly reloadFailures?: number;
  /** the mirror brokers it knows (SPEC §9) */
  readonly peers?: PeerView;
  /** with an `election` block (docs/operations.md#automatic-failover) */
  readonly election?: ElectionView | null;
  /** retained channels' histories and the replays served (docs/configuration.md#retention) */
  readonly history?: HistoryCounts;
  /** with a `cluster` block (SPEC §13): the sets as this broker last read them, and the placements */
  readonly cluster?: ClusterView | null;
  clusterPlacements?(query: PlacementQuery): PlacementList | null;
}

export interface HistoryCounts {
  list(): Array<[queue: string, stats: HistoryStats]>;
  readonly replays: number;
  readonly replaying: number;
  readonly replayedMessages: number;
}

export type Role = 'master' | 'slave';

export interface HealthView {
  status: 'ok' | 'degraded' | 'stopping' | 'unhealthy';
  role: Role;
  serviceId: string;
  uptimeSeconds: number;
  connections: number;
  reason?: string;
  peers?: PeerStatus[];
  /** two brokers configured as master see each other: the lowest serviceId delivers (SPEC §9) */
  conflict?: MasterConflict;
  election?: ElectionView;
}

export const roleOf = (broker: ManagedBroker): Role => (broker.isMaster ? 'master' : 'slave');

export const uptimeSeconds = (broker: ManagedBroker, now: number): number => Math.max(0, Math.floor((now - broker.startedAt) / 1000));

/** ok unless stopping, the store failed, or the mirrors are not in step (degraded); the HTTP status follows `status` */
export function healthView(broker: ManagedBroker, now: number): HealthView {
  const view: HealthView = { status: 'ok', role: roleOf(broker), serviceId: broker.config.serviceId, uptimeSeconds: uptimeSeconds(broker, now), connections: broker.sessions.size };
  const peers = broker.peers?.status() ?? [];
  if (peers.length > 0) view.peers = peers;
  const conflict = broker.peers?.conflict;
  if (conflict) {
    view.conflict = conflict;
    view.reason = `${conflict.masters.join(' and ')} are all configured as master: ${conflict.delivering} delivers`;
  }
  const election = broker.election;
  if (election) {
    view.election = election;
    if (election.phase === 'etcd-unreachable') view.reason = `not delivering: ${election.reason ?? 'etcd unreachable'} (safety before availability)`;
  }
  if (broker.isStopping) return { ...view, status: 'stopping', reason: 'broker is stopping' };
  if (!broker.isStoreHealthy) return { ...view, status: 'unhealthy', reason: 'message store is unhealthy: a write failed, sends are refused (E_STORE)' };
  const degraded = broker.peers?.degradedReason?.() ?? null;
  if (degraded) return { ...view, status: 'degraded', reason: (election && noMasterReason(election, peers)) ?? degraded };
  return view;
}

/** with an election and no peer acting as master, the reason is etcd's: nobody may deliver until it answers */
function noMasterReason(election: ElectionView, peers: readonly PeerStatus[]): string | null {
  if (election.isMaster || peers.some((peer) => peer.role === 'master')) return null;
  if (election.phase === 'etcd-unreachable') return `no master: etcd unreachable (${(election.reason ?? 'no answer').replace(/^etcd unreachable: /, '')}); this broker stores sends and delivers nothing`;
  if (election.phase === 'starting') return `no master: ${election.reason ?? 'not heard from etcd yet'}`;
  return null;
}

export interface QueueView {
  name: string;
  depth: number;
  inFlight: number;
  size: number;
  consumers: number;
  listeners: number;
  /** age of the oldest message waiting for a delivery; 0 when none waits */
  oldestWaitingSeconds: number;
  counters: QueueStats['counters'];
  /** per second over the last ~10 s */
  rates: QueueRates;
}

type Counts = ReadonlyMap<string, { consumers: number; listeners: number }>;

function queueView(queue: ManagedQueue, rates: RateWindow, now: number, counts: Counts): QueueView {
  const oldest = queue.oldestWaitingAcceptedAt();
  return {
    name: queue.name, depth: queue.depth, inFlight: queue.inFlightCount, size: queue.size,
    consumers: counts.get(queue.name)?.consumers ?? 0, listeners: counts.get(queue.name)?.listeners ?? 0,
    oldestWaitingSeconds: oldest === null ? 0 : Math.max(0, Math.round((now - oldest) / 100) / 10),
    counters: { ...queue.counters }, rates: rates.rates(now, queue.name, queue.counters),
  };
}

export function queuesView(broker: ManagedBroker, rates: RateWindow, now: number): { queues: QueueView[] } {
  const queues = [...broker.queues.values()].sort((a, b) => a.name.localeCompare(b.name));
  const counts = subscriberCounts(broker);
  return { queues: queues.map((q) => queueView(q, rates, now, counts)) };
}

export interface ConsumerView {
  client: string;
  node: string;
  sub: number;
  mode: SubscriptionMode;
  ids: string[];
  /** null for listeners (no bound) */
  prefetch: number | null;
  /** the client's flow limit (docs/protocol.md#flow): 0 paused, null none */
  limit: number | null;
  inFlight: number;
  delivered: number;
  /** deliveries per second since the previous look at this handler */
  rate: number;
}

/**
 * Deliveries per second of each handler, from how many it had at the previous request: a
 * WeakMap, so a closed subscription leaves nothing behind.
 */
export class HandlerRates {
  readonly #seen = new WeakMap<ManagedSubscription, { at: number; delivered: number; rate: number }>();

  rate(subscription: ManagedSubscription, now: number): number {
    const seen = this.#seen.get(subscription);
    if (seen && now - seen.at < 500) return seen.rate;
    const rate = seen ? Math.round(((subscription.delivered - seen.delivered) / ((now - seen.at) / 1000)) * 10) / 10 : 0;
    this.#seen.set(subscription, { at: now, delivered: subscription.delivered, rate });
    return rate;
  }
}

export interface QueueDetailView extends QueueView {
  settings: QueueSettings;
  /** ids with messages waiting or in flight, as users write them (unescaped), most messages first */
  ids: Array<{ id: string; count: number }>;
  idCount: number;
  truncated: boolean;
  /** every listen and consume handler on the queue, busiest first */
  handlers: ConsumerView[];
}

/** null for an unknown queue; at most `limit` ids */
export function queueDetailView(broker: ManagedBroker, name: string, rates: RateWindow, now: number, limit: number, handlerRates: HandlerRates): QueueDetailView | null {
  const queue = broker.queues.get(name);
  if (!queue) return null;
  const all = [...queue.listIds()].map(([id, count]) => ({ id, count })).sort((a, b) => b.count - a.count || a.id.localeCompare(b.id));
  const consumers: ConsumerView[] = [];
  for (const session of broker.sessions) {
    for (const s of session.subscriptions.values()) {
      if (s.queue !== name) continue;
      consumers.push({
        client: session.clientName, node: session.node, sub: s.sub, mode: s.mode, ids: [...s.ids].map(unescapeId),
        prefetch: Number.isFinite(s.prefetch) ? s.prefetch : null, limit: Number.isFinite(s.limit) ? s.limit : null, inFlight: queue.inFlightFor(s), delivered: s.delivered, rate: handlerRates.rate(s, now),
      });
    }
  }
  consumers.sort((a, b) => b.inFlight - a.inFlight || b.delivered - a.delivered || a.client.localeCompare(b.client));
  return { ...queueView(queue, rates, now, subscriberCounts(broker)), settings: { ...queue.settings }, ids: all.slice(0, limit), idCount: all.length, truncated: all.length > limit, handlers: consumers };
}

export interface ClientView {
  client: string;
  node: string;
  /** `peer`: a mirror broker following or watching this one */
  kind: 'client' | 'peer';
  subscriptions: Array<{ sub: number; mode: SubscriptionMode; queue: string; ids: string[] }>;
}

/** listen and consume handlers per queue, from the sessions' subscriptions */
export function subscriberCounts(broker: ManagedBroker): Map<string, { consumers: number; listeners: number }> {
  const counts = new Map<string, { consumers: number; listeners: number }>();
  for (const session of broker.sessions) {
    for (const s of session.subscriptions.values()) {
      let count = counts.get(s.queue);
      if (!count) counts.set(s.queue, (count = { consumers: 0, listeners: 0 }));
      if (s.mode === 'consume') count.consumers++;
      else count.listeners++;
    }
  }
  return counts;
}

/** authenticated connections; `connections` counts handshakes too */
export function clientsView(broker: ManagedBroker): { connections: number; clients: ClientView[] } {
  const clients: ClientView[] = [];
  for (const session of broker.sessions) {
    if (!session.isReady) continue;
    const subscriptions = [...session.subscriptions.values()]
      .sort((a, b) => a.sub - b.sub)
      .map((s) => ({ sub: s.sub, mode: s.mode, queue: s.queue, ids: [...s.ids].map(unescapeId) }));
    clients.push({ client: session.clientName, node: session.node, kind: session.isPeer === true ? 'peer' : 'client', subscriptions });
  }
  clients.sort((a, b) => a.client.localeCompare(b.client) || a.node.localeCompare(b.node));
  return { connections: broker.sessions.size, clients };
}
