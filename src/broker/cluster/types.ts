/** where a queue lives in a cluster (SPEC §13); `move` is room for `whisker move`'s state, not used yet */
export interface Placement {
  readonly set: string;
  readonly move?: { readonly to: string; readonly phase: string };
}

/** one broker of a set as it registered itself in etcd */
export interface Member {
  readonly serviceId: string;
  /** the host string clients dial, no token */
  readonly advertise: string;
  readonly weight: number;
  /** the broker's role as it last registered it (for `whisker cluster status`) */
  readonly isMaster: boolean;
  readonly epoch: number | null;
  /** its own queues as it last published them (stats.ts), null before the first or from an older broker */
  readonly stats: BrokerStats | null;
}

/** what a broker publishes of its queues with its registration: `whisker cluster status` shows every set's */
export interface BrokerStats {
  /** queues it holds, and their waiting and in-flight messages */
  readonly queues: number;
  readonly waiting: number;
  readonly inFlight: number;
  /** per second over the last publishing interval (stats.ts) */
  readonly rates: { readonly received: number; readonly delivered: number; readonly acked: number };
}

/** what changed in the cluster map since it was last told (coalesced, one per tick) */
export interface ClusterChange {
  readonly sets: boolean;
  readonly placed: ReadonlyMap<string, string>;
  readonly removed: ReadonlySet<string>;
}

/** parses a placement value from etcd; null for one this version cannot read */
export function decodePlacement(text: string): Placement | null {
  try {
    const value = JSON.parse(text) as { set?: unknown; move?: { to?: unknown; phase?: unknown } };
    if (typeof value.set !== 'string' || value.set.length === 0 || value.set.length > 64) return null;
    const move = value.move && typeof value.move.to === 'string' && typeof value.move.phase === 'string' ? { to: value.move.to, phase: value.move.phase } : undefined;
    return move ? { set: value.set, move } : { set: value.set };
  } catch {
    return null;
  }
}

export function decodeMember(serviceId: string, text: string): Member | null {
  try {
    const value = JSON.parse(text) as { advertise?: unknown; weight?: unknown; isMaster?: unknown; epoch?: unknown; stats?: unknown };
    if (typeof value.advertise !== 'string' || value.advertise.length > 512) return null;
    const weight = typeof value.weight === 'number' && value.weight > 0 && value.weight <= 1000 ? value.weight : 1;
    const epoch = Number.isSafeInteger(value.epoch) ? (value.epoch as number) : null;
    return { serviceId, advertise: value.advertise, weight, isMaster: value.isMaster === true, epoch, stats: decodeStats(value.stats) };
  } catch {
    return null;
  }
}

const count = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0;

/** a member's published stats, or null when absent or not numbers (a value in etcd is not trusted) */
function decodeStats(value: unknown): BrokerStats | null {
  if (typeof value !== 'object' || value === null) return null;
  const { queues, waiting, inFlight, rates } = value as Record<string, unknown>;
  if (!count(queues) || !count(waiting) || !count(inFlight) || typeof rates !== 'object' || rates === null) return null;
  const { received, delivered, acked } = rates as Record<string, unknown>;
  if (!count(received) || !count(delivered) || !count(acked)) return null;
  return { queues, waiting, inFlight, rates: { received, delivered, acked } };
}
