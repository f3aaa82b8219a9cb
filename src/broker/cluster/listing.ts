import type { Placement } from './types.js';

/** which placements an operator asks to see (`whisker cluster status --placements`, /api/cluster) */
export interface PlacementQuery {
  /** only those on this set */
  readonly set?: string | undefined;
  /** at most this many, the first by queue name */
  readonly limit: number;
}

export interface PlacementList {
  readonly placements: Array<{ readonly queue: string; readonly set: string; readonly move?: { readonly to: string; readonly phase: string } }>;
  /** how many matched, shown or not */
  readonly total: number;
  readonly truncated: boolean;
}

/** the first `limit` placements by queue name: the answer stays small whatever the map holds (up to limits.maxPlacements) */
export function listPlacements(entries: Iterable<[string, Placement]>, query: PlacementQuery): PlacementList {
  const matched: Array<[string, Placement]> = [];
  for (const entry of entries) if (query.set === undefined || entry[1].set === query.set) matched.push(entry);
  matched.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
  const placements = matched.slice(0, query.limit).map(([queue, p]) => (p.move ? { queue, set: p.set, move: { to: p.move.to, phase: p.move.phase } } : { queue, set: p.set }));
  return { placements, total: matched.length, truncated: matched.length > placements.length };
}
