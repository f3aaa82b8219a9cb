import type { QueueCounters } from '../broker/api.js';

export type QueueRates = Record<keyof QueueCounters, number>;

interface Sample {
  readonly at: number;
  readonly counters: ReadonlyMap<string, QueueCounters>;
}

const ZERO: QueueCounters = { received: 0, delivered: 0, acked: 0, requeued: 0, timedOut: 0, deadLettered: 0, dropped: 0, expired: 0 };
const KEYS = Object.keys(ZERO) as Array<keyof QueueCounters>;

/**
 * Per-second rates of each queue's counters over the last `windowMs`, from samples taken about
 * once a second. Pure: the caller passes the times, so tests need no clock.
 */
export class RateWindow {
  readonly #windowMs: number;
  #samples: Sample[] = [];

  constructor(windowMs = 10_000) {
    this.#windowMs = windowMs;
  }

  record(at: number, queues: Iterable<{ readonly name: string; readonly counters: QueueCounters }>): void {
    const counters = new Map<string, QueueCounters>();
    for (const queue of queues) counters.set(queue.name, { ...queue.counters });
    this.#samples.push({ at, counters });
    // keep the newest sample at or before the window's start, so the window stays full
    while (this.#samples.length > 1 && this.#samples[1]!.at <= at - this.#windowMs) this.#samples.shift();
  }

  /** rates from the oldest kept sample to `current` at `at`; zero until a sample is a while old */
  rates(at: number, name: string, current: QueueCounters): QueueRates {
    const oldest = this.#samples[0];
    const elapsedSeconds = oldest ? (at - oldest.at) / 1000 : 0;
    const rates = { ...ZERO };
    if (elapsedSeconds < 0.5) return rates;
    // a queue created after the oldest sample started from zero
    const before = oldest!.counters.get(name) ?? ZERO;
    for (const key of KEYS) rates[key] = Math.round((Math.max(0, current[key] - before[key]) / elapsedSeconds) * 100) / 100;
    return rates;
  }
}
