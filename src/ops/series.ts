import type { HistoryStats, PeerStatus, QueueCounters } from '../broker/api.js';
import { unescapeId } from '../protocol/channel.js';

/** One queue as the metrics see it (`Queue` has these). */
export interface QueueStats {
  readonly name: string;
  readonly depth: number;
  readonly inFlightCount: number;
  readonly size: number;
  /** waiting messages kept as compact rows past `memoryWindow` */
  readonly coldSize: number;
  readonly counters: QueueCounters;
  oldestWaitingAcceptedAt(): number | null;
  inFlightByGroup(): ReadonlyArray<{ readonly mode: 'consume' | 'listen'; readonly clientName: string; readonly pattern: string; readonly inFlight: number }>;
}

export type PeerSeries = PeerStatus;

/** the label under which queues past `maxQueueSeries` add up (no queue name lacks a `/`) */
export const OTHER_QUEUES = '_other';

/** one queue's values for one scrape */
export interface QueueSeries {
  readonly name: string;
  readonly counters: QueueCounters;
  readonly depth: number;
  readonly inFlight: number;
  readonly size: number;
  readonly cold: number;
  readonly oldestWaitingSeconds: number;
  readonly consumers: number;
  readonly listeners: number;
  readonly maxGroupInFlight: number;
}

export interface GroupSeries {
  readonly queue: string;
  readonly mode: 'consume' | 'listen';
  /** the listener's client name; empty for consumers (one group per id across clients) */
  readonly client: string;
  readonly id: string;
  readonly inFlight: number;
}

/**
 * One series per queue for the first `max` queues by name; the others add up under
 * `queue="_other"` (ages and the busiest group: the largest), so a client that makes many
 * queues cannot make the scrape grow without bound (docs/management.md#label-cardinality).
 */
export function queueSeries(queues: readonly QueueStats[], subscribers: ReadonlyMap<string, { consumers: number; listeners: number }>, now: number, max: number): QueueSeries[] {
  const sorted = [...queues].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const one = (q: QueueStats): QueueSeries => {
    const oldest = q.oldestWaitingAcceptedAt();
    const subs = subscribers.get(q.name);
    return {
      name: q.name,
      counters: { ...q.counters },
      depth: q.depth,
      inFlight: q.inFlightCount,
      size: q.size,
      cold: q.coldSize,
      oldestWaitingSeconds: oldest === null ? 0 : Math.max(0, (now - oldest) / 1000),
      consumers: subs?.consumers ?? 0,
      listeners: subs?.listeners ?? 0,
      maxGroupInFlight: q.inFlightCount === 0 ? 0 : Math.max(0, ...q.inFlightByGroup().map((g) => g.inFlight)),
    };
  };
  const own = sorted.slice(0, max).map(one);
  const rest = sorted.slice(max).map(one);
  if (rest.length === 0) return own;
  const counters = { ...own[0]!.counters };
  for (const key of Object.keys(counters) as Array<keyof QueueCounters>) counters[key] = rest.reduce((sum, q) => sum + q.counters[key], 0);
  const sum = (pick: (q: QueueSeries) => number) => rest.reduce((total, q) => total + pick(q), 0);
  const most = (pick: (q: QueueSeries) => number) => Math.max(...rest.map(pick));
  own.push({
    name: OTHER_QUEUES,
    counters,
    depth: sum((q) => q.depth),
    inFlight: sum((q) => q.inFlight),
    size: sum((q) => q.size),
    cold: sum((q) => q.cold),
    oldestWaitingSeconds: most((q) => q.oldestWaitingSeconds),
    consumers: sum((q) => q.consumers),
    listeners: sum((q) => q.listeners),
    maxGroupInFlight: most((q) => q.maxGroupInFlight),
  });
  return own;
}

/** one retained channel's history for one scrape */
export interface HistorySeries {
  readonly name: string;
  readonly bytes: number;
  readonly messages: number;
  readonly oldestSeconds: number;
}

/**
 * One series per retained channel, bounded as the queues' are: the first `max` by name, the
 * others added up under `queue="_other"` (the oldest age: the largest).
 */
export function historySeries(histories: ReadonlyArray<readonly [string, HistoryStats]>, now: number, max: number): HistorySeries[] {
  const sorted = [...histories].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const one = ([name, s]: readonly [string, HistoryStats]): HistorySeries => ({ name, bytes: s.bytes, messages: s.count, oldestSeconds: s.oldestAt === null ? 0 : Math.max(0, (now - s.oldestAt) / 1000) });
  const own = sorted.slice(0, max).map(one);
  const rest = sorted.slice(max).map(one);
  if (rest.length === 0) return own;
  own.push({
    name: OTHER_QUEUES,
    bytes: rest.reduce((n, h) => n + h.bytes, 0),
    messages: rest.reduce((n, h) => n + h.messages, 0),
    oldestSeconds: Math.max(...rest.map((h) => h.oldestSeconds)),
  });
  return own;
}

/** in flight per recipient group, the `max` busiest only (opt-in) */
export function groupSeries(queues: readonly QueueStats[], max: number): GroupSeries[] {
  const all: GroupSeries[] = [];
  for (const queue of queues) {
    if (queue.inFlightCount === 0) continue;
    for (const g of queue.inFlightByGroup()) all.push({ queue: queue.name, mode: g.mode, client: g.mode === 'consume' ? '' : g.clientName, id: unescapeId(g.pattern), inFlight: g.inFlight });
  }
  all.sort((a, b) => b.inFlight - a.inFlight || (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0));
  return all.slice(0, max);
}
