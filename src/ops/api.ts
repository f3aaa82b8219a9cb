import type { MasterConflict, PeerStatus, QueueSettings } from '../broker/api.js';
import type { Config } from '../config/types.js';
import type { SubscriptionMode } from '../protocol/frames.js';
import { unescapeId } from '../protocol/channel.js';
import type { QueueStats } from './metrics.js';
import type { QueueRates, RateWindow } from './rates.js';

/** One queue as the management surface reads it (`Queue` has these). */
export interface ManagedQueue extends QueueStats {
  readonly settings: QueueSettings;
  listIds(): Map<string, number>;
}

/** One connection as the management surface reads it (`Session` has these). */
export interface ManagedSession {
  readonly clientName: string;
  readonly node: string;
  readonly isReady: boolean;
  readonly subscriptions: ReadonlyMap<number, { readonly sub: number; readonly mode: SubscriptionMode; readonly queue: string; readonly ids: ReadonlySet<string> }>;
}

/**
 * What the management surface reads of a running broker; the `Broker` object is one. It only
 * reads: soft-stop and the store say what they are doing through `isStopping` and
 * `isStoreHealthy` (docs/management.md#health).
 */
export interface ManagedBroker {
  readonly config: Config;
  readonly router: { readonly queues: ReadonlyMap<string, ManagedQueue>; readonly isMaster: boolean };
  readonly sessions: ReadonlySet<ManagedSession>;
  /** ms since the epoch, from the broker's clock */
  readonly startedAt: number;
  readonly isStopping: boolean;
  readonly isStoreHealthy: boolean;
  /** reloads refused since start, when the broker counts them */
  readonly reloadFailures?: number;
  /** the mirror brokers it knows (SPEC §9) */
  readonly peers?: { readonly conflict: MasterConflict | null; status(): PeerStatus[] };
}

export type Role = 'master' | 'slave';

export interface HealthView {
  status: 'ok' | 'stopping' | 'unhealthy';
  role: Role;
  serviceId: string;
  uptimeSeconds: number;
  connections: number;
  reason?: string;
  peers?: PeerStatus[];
  /** two brokers configured as master see each other: the lowest serviceId delivers (SPEC §9) */
  conflict?: MasterConflict;
}

export const roleOf = (broker: ManagedBroker): Role => (broker.router.isMaster ? 'master' : 'slave');

export const uptimeSeconds = (broker: ManagedBroker, now: number): number => Math.max(0, Math.floor((now - broker.startedAt) / 1000));

/** ready unless stopping or the store failed; the HTTP status follows `status` */
export function healthView(broker: ManagedBroker, now: number): HealthView {
  const view: HealthView = { status: 'ok', role: roleOf(broker), serviceId: broker.config.serviceId, uptimeSeconds: uptimeSeconds(broker, now), connections: broker.sessions.size };
  const peers = broker.peers?.status() ?? [];
  if (peers.length > 0) view.peers = peers;
  const conflict = broker.peers?.conflict;
  if (conflict) {
    view.conflict = conflict;
    view.reason = `${conflict.masters.join(' and ')} are all configured as master: ${conflict.delivering} delivers`;
  }
  if (broker.isStopping) return { ...view, status: 'stopping', reason: 'broker is stopping' };
  if (!broker.isStoreHealthy) return { ...view, status: 'unhealthy', reason: 'message store is unhealthy: a write failed, sends are refused (E_STORE)' };
  return view;
}

export interface QueueView {
  name: string;
  depth: number;
  inFlight: number;
  size: number;
  counters: QueueStats['counters'];
  /** per second over the last ~10 s */
  rates: QueueRates;
}

function queueView(queue: ManagedQueue, rates: RateWindow, now: number): QueueView {
  return { name: queue.name, depth: queue.depth, inFlight: queue.inFlightCount, size: queue.size, counters: { ...queue.counters }, rates: rates.rates(now, queue.name, queue.counters) };
}

export function queuesView(broker: ManagedBroker, rates: RateWindow, now: number): { queues: QueueView[] } {
  const queues = [...broker.router.queues.values()].sort((a, b) => a.name.localeCompare(b.name));
  return { queues: queues.map((q) => queueView(q, rates, now)) };
}

export interface QueueDetailView extends QueueView {
  settings: QueueSettings;
  /** ids with messages waiting or in flight, as users write them (unescaped), most messages first */
  ids: Array<{ id: string; count: number }>;
  idCount: number;
  truncated: boolean;
}

/** null for an unknown queue; at most `limit` ids */
export function queueDetailView(broker: ManagedBroker, name: string, rates: RateWindow, now: number, limit: number): QueueDetailView | null {
  const queue = broker.router.queues.get(name);
  if (!queue) return null;
  const all = [...queue.listIds()].map(([id, count]) => ({ id, count })).sort((a, b) => b.count - a.count || a.id.localeCompare(b.id));
  return { ...queueView(queue, rates, now), settings: { ...queue.settings }, ids: all.slice(0, limit), idCount: all.length, truncated: all.length > limit };
}

export interface ClientView {
  client: string;
  node: string;
  subscriptions: Array<{ sub: number; mode: SubscriptionMode; queue: string; ids: string[] }>;
}

/** authenticated connections; `connections` counts handshakes too */
export function clientsView(broker: ManagedBroker): { connections: number; clients: ClientView[] } {
  const clients: ClientView[] = [];
  for (const session of broker.sessions) {
    if (!session.isReady) continue;
    const subscriptions = [...session.subscriptions.values()]
      .sort((a, b) => a.sub - b.sub)
      .map((s) => ({ sub: s.sub, mode: s.mode, queue: s.queue, ids: [...s.ids].map(unescapeId) }));
    clients.push({ client: session.clientName, node: session.node, subscriptions });
  }
  clients.sort((a, b) => a.client.localeCompare(b.client) || a.node.localeCompare(b.node));
  return { connections: broker.sessions.size, clients };
}
