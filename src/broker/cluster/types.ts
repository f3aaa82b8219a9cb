/**
 * A move under way (`whisker move`, SPEC §13, docs/operations.md#moving-a-queue): `export` while
 * the old set's master writes what it holds to etcd, `import` once it did (`chunks` keys), until
 * the new set's master took it and wrote the placement `{ set: to }`. `id` names this move's keys.
 * A move called off (a hand-over too big) goes back: `return` while the new set's master writes
 * the sends it took meanwhile to etcd, `returned` once it did, until the old set's master took
 * them and wrote `{ set: from }` again.
 */
export interface Move {
  readonly to: string;
  readonly phase: 'export' | 'import' | 'return' | 'returned';
  readonly id: string;
  readonly chunks?: number;
  /** with `import` and `returned`: which writer's keys (`<id>/<part>/`): two masters of the old set (a partition) never mix theirs */
  readonly part?: string;
}

/** where a queue lives in a cluster (SPEC §13), and the move under way, if any */
export interface Placement {
  readonly set: string;
  readonly move?: Move;
}

/** a move called off, handing back what the new set took meanwhile */
export function isReturn(move: Move): boolean {
  return move.phase === 'return' || move.phase === 'returned';
}

/** the set that takes a queue's new sends and subscriptions: the new one as soon as a move starts, the old one again once it is called off */
export function routeOf(placement: Placement): string {
  const move = placement.move;
  return move && !isReturn(move) ? move.to : placement.set;
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
    const value = JSON.parse(text) as { set?: unknown; move?: Record<string, unknown> };
    if (typeof value.set !== 'string' || value.set.length === 0 || value.set.length > 64) return null;
    if (value.move === undefined) return { set: value.set };
    const { to, phase, id, chunks, part } = value.move as { to?: unknown; phase?: unknown; id?: unknown; chunks?: unknown; part?: unknown };
    if (typeof to !== 'string' || to.length === 0 || to.length > 64 || (phase !== 'export' && phase !== 'import' && phase !== 'return' && phase !== 'returned') || typeof id !== 'string' || !/^[0-9a-f]{1,64}$/.test(id)) return null;
    const written = phase === 'import' || phase === 'returned';
    if (written && !(Number.isSafeInteger(chunks) && (chunks as number) >= 0 && (chunks as number) <= 100_000 && typeof part === 'string' && /^[0-9a-f]{1,64}$/.test(part))) return null;
    return { set: value.set, move: { to, phase, id, ...(written ? { chunks: chunks as number, part: part as string } : {}) } };
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
