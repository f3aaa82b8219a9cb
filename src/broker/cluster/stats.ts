import type { BrokerStats } from './types.js';

/** what the sampler reads of each queue (the Queue has these) */
export interface CountedQueue {
  readonly name: string;
  readonly depth: number;
  readonly inFlightCount: number;
  readonly counters: { readonly received: number; readonly delivered: number; readonly acked: number };
}

type Totals = { received: number; delivered: number; acked: number };
const KEYS = ['received', 'delivered', 'acked'] as const;

/**
 * A broker's own queues summed for the cluster map (membership.ts publishes it every
 * STATS_INTERVAL_MS): counts now, rates since the previous sample. Per queue, so a queue
 * forgotten or made again in between changes no other queue's rate. Pure: the caller gives the time.
 */
export class StatsSampler {
  #previous = new Map<string, Totals>();
  #previousAt: number | null = null;

  sample(now: number, queues: Iterable<CountedQueue>): BrokerStats {
    const seconds = this.#previousAt === null ? 0 : (now - this.#previousAt) / 1000;
    const next = new Map<string, Totals>();
    const sums: Totals = { received: 0, delivered: 0, acked: 0 };
    let [count, waiting, inFlight] = [0, 0, 0];
    for (const queue of queues) {
      count++;
      waiting += queue.depth;
      inFlight += queue.inFlightCount;
      const totals = { received: queue.counters.received, delivered: queue.counters.delivered, acked: queue.counters.acked };
      next.set(queue.name, totals);
      const before = this.#previous.get(queue.name);
      // counters only grow in one queue's life: lower than before, it was forgotten and made again
      for (const key of KEYS) sums[key] += totals[key] >= (before?.[key] ?? 0) ? totals[key] - (before?.[key] ?? 0) : totals[key];
    }
    this.#previous = next;
    this.#previousAt = now;
    // no rate from the first sample: what it counted happened since the queue began
    const rate = (n: number) => (seconds > 0 ? Math.round((n / seconds) * 10) / 10 : 0);
    return { queues: count, waiting, inFlight, rates: { received: rate(sums.received), delivered: rate(sums.delivered), acked: rate(sums.acked) } };
  }
}
