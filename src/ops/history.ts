import type { QueueCounters } from '../broker/api.js';

/** what a chart shows per point: per second since the point before */
export interface HistoryRates {
  received: number;
  delivered: number;
  acked: number;
  requeued: number;
}

export interface HistoryPoint {
  /** ms epoch: the end of the interval the rates cover */
  at: number;
  total: HistoryRates;
  /** the busiest queues at that point; a queue missing from a point was not among them */
  queues: Record<string, HistoryRates>;
}

interface Sample {
  at: number;
  total: HistoryRates;
  queues: Map<string, HistoryRates>;
}

const KEYS = ['received', 'delivered', 'acked', 'requeued'] as const;
const zero = (): HistoryRates => ({ received: 0, delivered: 0, acked: 0, requeued: 0 });

/**
 * The dashboard's rate history (docs/management.md#dashboard): counters kept every `stepMs`
 * for the `maxQueues` busiest queues and the total, `maxPoints` of them (by default 300 at
 * 2 s: 10 minutes), so its memory is fixed whatever clients do (docs/security.md). Pure: the
 * caller passes the times.
 */
export class RateHistory {
  readonly stepMs: number;
  readonly #maxPoints: number;
  readonly #maxQueues: number;
  readonly #samples: Sample[] = [];

  constructor(options: { stepMs?: number; maxPoints?: number; maxQueues?: number } = {}) {
    this.stepMs = options.stepMs ?? 2000;
    this.#maxPoints = options.maxPoints ?? 300;
    this.#maxQueues = options.maxQueues ?? 20;
  }

  /** called often (each rate sample); keeps a sample once `stepMs` passed since the last one */
  record(at: number, queues: Iterable<{ readonly name: string; readonly counters: QueueCounters }>): void {
    const last = this.#samples.at(-1);
    if (last && at - last.at < this.stepMs) return;
    this.#samples.push(this.#sample(at, queues));
    // one more sample than points: the oldest point needs the sample before it
    while (this.#samples.length > this.#maxPoints + 1) this.#samples.shift();
  }

  /** the kept points, then one from the last kept sample to now (when a second has passed) */
  points(at: number, queues: Iterable<{ readonly name: string; readonly counters: QueueCounters }>): HistoryPoint[] {
    const samples = [...this.#samples];
    const last = samples.at(-1);
    if (last && at - last.at >= 1000) samples.push(this.#sample(at, queues));
    const points: HistoryPoint[] = [];
    for (let i = 1; i < samples.length; i++) {
      const before = samples[i - 1]!;
      const after = samples[i]!;
      const seconds = (after.at - before.at) / 1000;
      const rates = (a: HistoryRates, b: HistoryRates): HistoryRates => {
        const r = zero();
        for (const key of KEYS) r[key] = Math.round((Math.max(0, a[key] - b[key]) / seconds) * 100) / 100;
        return r;
      };
      const perQueue: Record<string, HistoryRates> = {};
      for (const [name, counters] of after.queues) {
        // not in the sample before: new since (it started from zero), unless the cap left it out
        const previous = before.queues.get(name) ?? (before.queues.size < this.#maxQueues ? zero() : undefined);
        if (previous) perQueue[name] = rates(counters, previous);
      }
      points.push({ at: after.at, total: rates(after.total, before.total), queues: perQueue });
    }
    return points;
  }

  #sample(at: number, queues: Iterable<{ readonly name: string; readonly counters: QueueCounters }>): Sample {
    const total = zero();
    const all: Array<[string, HistoryRates, number]> = [];
    for (const queue of queues) {
      const counters = zero();
      for (const key of KEYS) {
        counters[key] = queue.counters[key];
        total[key] += queue.counters[key];
      }
      all.push([queue.name, counters, queue.counters.received + queue.counters.delivered]);
    }
    // the busiest by traffic so far; a queue that drops out and back in restarts its line
    all.sort((a, b) => b[2] - a[2] || (a[0] < b[0] ? -1 : 1));
    return { at, total, queues: new Map(all.slice(0, this.#maxQueues).map(([name, counters]) => [name, counters])) };
  }
}
