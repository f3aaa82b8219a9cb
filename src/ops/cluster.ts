import type { BrokerStats, ClusterView, ElectionView, Member, PlacementList, PlacementQuery } from '../broker/api.js';

/** what the cluster views read of a broker (the `Broker` is one; SPEC §13) */
export interface ClusteredBroker {
  readonly config: { readonly serviceId: string };
  /** absent or null without a cluster block */
  readonly cluster?: ClusterView | null;
  readonly election?: ElectionView | null;
  clusterPlacements?(query: PlacementQuery): PlacementList | null;
}

export interface SetStatus {
  readonly name: string;
  /** queues placed on it (the placement map) */
  readonly placements: number;
  /** the broker that registered itself as master, and its epoch; null: none */
  readonly master: string | null;
  readonly epoch: number | null;
  /** what its master published of its queues (another broker's when it has no master), null before the first */
  readonly stats: BrokerStats | null;
  readonly brokers: readonly Member[];
}

/** `whisker cluster status --json`, `GET /api/cluster` (docs/operations.md#commands, docs/management.md#json-api) */
export interface ClusterStatus {
  readonly serviceId: string;
  readonly set: string;
  /** `reachable`: this broker's etcd answers now; `mapRead`: the map was read once since start */
  readonly etcd: { readonly reachable: boolean; readonly mapRead: boolean; readonly reason: string | null };
  readonly placements: number;
  readonly maxPlacements: number;
  readonly sets: readonly SetStatus[];
  /** moves under way (`whisker move`) */
  readonly moves: ClusterView['moves'];
  readonly placementList?: PlacementList;
}

/** at most this many placements in one answer (`--limit`, `?limit=`) */
export const MAX_PLACEMENTS_LISTED = 10_000;
export const DEFAULT_PLACEMENTS_LISTED = 100;

/** null without a cluster block; the sets as this broker last read them from etcd */
export function clusterStatus(broker: ClusteredBroker, placements?: PlacementQuery): ClusterStatus | null {
  const view = broker.cluster;
  if (!view) return null;
  const election = broker.election ?? null;
  const cutOff = election?.phase === 'etcd-unreachable';
  const reachable = view.mapRead && !cutOff;
  const reason = reachable ? null : (election?.reason ?? 'not heard from etcd yet');
  const sets = view.sets.map((set): SetStatus => {
    const masters = set.brokers.filter((b) => b.isMaster).sort((x, y) => (y.epoch ?? 0) - (x.epoch ?? 0));
    const master = masters[0] ?? null;
    // the master counts what the set delivers; without one, the broker holding the most
    const counted = master?.stats ? master : [...set.brokers].filter((b) => b.stats).sort((x, y) => y.stats!.queues - x.stats!.queues)[0];
    return { name: set.name, placements: set.placements, master: master?.serviceId ?? null, epoch: master?.epoch ?? null, stats: counted?.stats ?? null, brokers: set.brokers };
  });
  const list = placements ? (broker.clusterPlacements?.(placements) ?? null) : null;
  return {
    serviceId: broker.config.serviceId,
    set: view.set,
    etcd: { reachable, mapRead: view.mapRead, reason },
    placements: view.placements,
    maxPlacements: view.maxPlacements,
    sets,
    moves: view.moves,
    ...(list ? { placementList: list } : {}),
  };
}

/** a `limit` given as text or number: a whole number from 1 to MAX_PLACEMENTS_LISTED, else null */
export function placementLimit(value: unknown): number | null {
  if (value === undefined || value === null) return DEFAULT_PLACEMENTS_LISTED;
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : NaN;
  return Number.isInteger(n) && n >= 1 && n <= MAX_PLACEMENTS_LISTED ? n : null;
}
