import { performance } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { MessageStore, QueueCounters } from '../broker/api.js';

/** One queue as the metrics see it (`Queue` has these). */
export interface QueueStats {
  readonly name: string;
  readonly depth: number;
  readonly inFlightCount: number;
  readonly size: number;
  readonly counters: QueueCounters;
}

/** What the metrics read of a running broker, at scrape time (docs/management.md#metrics). */
export interface MetricsSource {
  queues(): Iterable<QueueStats>;
  readonly connections: number;
  readonly isMaster: boolean;
  readonly reloadFailures: number;
  readonly isStoreHealthy: boolean;
  readonly uptimeSeconds: number;
  /** configured masters this broker sees, itself included, when more than one */
  readonly conflictingMasters: number;
  readonly peersConnected: number;
}

/** one Prometheus counter per queue counter; names end in `_total` as Prometheus expects */
const COUNTERS: ReadonlyArray<[keyof QueueCounters, string, string]> = [
  ['received', 'whisker_messages_received_total', 'Messages stored and accepted into the queue'],
  ['delivered', 'whisker_messages_delivered_total', 'Deliveries sent to subscribers, redeliveries included'],
  ['acked', 'whisker_messages_acked_total', 'Deliveries acked by a consumer'],
  ['requeued', 'whisker_messages_requeued_total', 'Deliveries put back for another attempt (nack, timeout, lost connection)'],
  ['timedOut', 'whisker_messages_timed_out_total', 'Deliveries not acked within requeueInterval'],
  ['deadLettered', 'whisker_messages_dead_lettered_total', 'Messages sent to their dead-letter channel after requeueLimit deliveries'],
  ['dropped', 'whisker_messages_dropped_total', 'Messages dropped: requeueLimit reached without a dead-letter channel, or drop-oldest overflow'],
  ['expired', 'whisker_messages_expired_total', 'Messages whose ttl ran out before every group had them'],
];

/** store append latency buckets in seconds: group commit with fdatasync sits around 1-20 ms */
const APPEND_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/**
 * The broker's Prometheus metrics in their own registry (never prom-client's global one, so
 * two brokers in one process do not share series). Values are read from `source` on scrape;
 * only the append latency is observed as it happens.
 */
export class BrokerMetrics {
  readonly registry = new Registry();
  readonly #appendSeconds: Histogram;
  /** one 10 ms timer: how late it fires is how long the event loop was held up */
  readonly #loopTimer: NodeJS.Timeout;
  #source: MetricsSource | null = null;

  constructor() {
    const registers = [this.registry];
    const read = () => this.#source;
    for (const [key, name, help] of COUNTERS) {
      new Counter({
        name, help, labelNames: ['queue'], registers,
        collect() {
          this.reset();
          for (const queue of read()?.queues() ?? []) this.inc({ queue: queue.name }, queue.counters[key]);
        },
      });
    }
    const perQueue = (name: string, help: string, value: (queue: QueueStats) => number) =>
      new Gauge({
        name, help, labelNames: ['queue'], registers,
        collect() {
          this.reset();
          for (const queue of read()?.queues() ?? []) this.set({ queue: queue.name }, value(queue));
        },
      });
    perQueue('whisker_queue_depth', 'Messages not yet delivered to every group (waiting, requeued or delayed)', (q) => q.depth);
    perQueue('whisker_queue_in_flight', 'Deliveries sent and not yet acked', (q) => q.inFlightCount);
    perQueue('whisker_queue_messages', 'Messages the queue holds, in flight included', (q) => q.size);
    const single = (name: string, help: string, value: (s: MetricsSource) => number) =>
      new Gauge({
        name, help, registers,
        collect() {
          const source = read();
          if (source) this.set(value(source));
        },
      });
    single('whisker_connections', 'Open client connections, handshakes included', (s) => s.connections);
    single('whisker_role', 'Role of this broker: 1 master, 0 slave', (s) => (s.isMaster ? 1 : 0));
    single('whisker_store_healthy', 'Message store health: 1 healthy, 0 failed (sends are refused with E_STORE)', (s) => (s.isStoreHealthy ? 1 : 0));
    single('whisker_master_conflict', 'Brokers configured as master that see each other (0 when there is no conflict); the lowest serviceId delivers', (s) => s.conflictingMasters);
    single('whisker_peers_connected', 'Peers this broker has a live link to', (s) => s.peersConnected);
    single('whisker_uptime_seconds', 'Seconds since the broker started', (s) => s.uptimeSeconds);
    new Counter({
      name: 'whisker_reload_failures_total', help: 'Config reloads refused (invalid config); the running config stayed', registers,
      collect() {
        this.reset();
        this.inc(read()?.reloadFailures ?? 0);
      },
    });
    // perf_hooks' monitorEventLoopDelay loses the first interval after each reset(), so a pause
    // that starts just after a scrape would not show: a plain timer does not
    const LOOP_TICK_MS = 10;
    let lastTick = performance.now();
    let longestMs = 0;
    this.#loopTimer = setInterval(() => {
      const now = performance.now();
      longestMs = Math.max(longestMs, now - lastTick - LOOP_TICK_MS);
      lastTick = now;
    }, LOOP_TICK_MS).unref();
    new Gauge({
      name: 'whisker_event_loop_delay_max_seconds', help: 'Longest event-loop pause since the previous scrape (GC, a long task), to 10 ms', registers,
      collect() {
        // a pause still under way when the scrape runs counts too
        this.set(Math.max(longestMs, performance.now() - lastTick - LOOP_TICK_MS, 0) / 1000);
        longestMs = 0;
      },
    });
    this.#appendSeconds = new Histogram({
      name: 'whisker_store_append_seconds', help: 'Time from a store append to the messages being durable, per batch', buckets: APPEND_BUCKETS, registers,
    });
  }

  /** the broker to read from; set once it exists (the store is wrapped before) */
  bind(source: MetricsSource): void {
    this.#source = source;
  }

  /** stops sampling the event loop: the broker stopped */
  close(): void {
    clearInterval(this.#loopTimer);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  /**
   * The same store, with each append timed: one `performance.now()` pair per batch, never per
   * message, and nothing else on the hot path.
   */
  timeAppends(store: MessageStore): MessageStore {
    const histogram = this.#appendSeconds;
    return {
      load: () => store.load(),
      append(messages) {
        const started = performance.now();
        const stored = store.append(messages);
        stored.then(() => histogram.observe((performance.now() - started) / 1000), () => undefined);
        return stored;
      },
      record: (events) => store.record(events),
      readsBodies: store.readsBodies,
      readBodies: (messageIds) => store.readBodies(messageIds),
      isHealthy: () => store.isHealthy(),
      close: () => store.close(),
    };
  }
}
