import { performance } from 'node:perf_hooks';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ElectionView, MessageStore, QueueCounters } from '../broker/api.js';
import type { HistoryStats } from '../broker/api.js';
import type { ClusterStatus } from './cluster.js';
import { type GroupSeries, groupSeries, type HistorySeries, historySeries, type PeerSeries, type QueueSeries, queueSeries, type QueueStats } from './series.js';

export type { QueueStats } from './series.js';

/** What the metrics read of a running broker, at scrape time (docs/management.md#metrics). */
export interface MetricsSource {
  queues(): Iterable<QueueStats>;
  /** listen and consume handlers per queue name */
  subscriberCounts(): ReadonlyMap<string, { consumers: number; listeners: number }>;
  peers(): readonly PeerSeries[];
  readonly connections: number;
  readonly isMaster: boolean;
  readonly reloadFailures: number;
  readonly isStoreHealthy: boolean;
  readonly uptimeSeconds: number;
  /** configured masters this broker sees, itself included, when more than one */
  readonly conflictingMasters: number;
  readonly peersConnected: number;
  /** ms epoch, for ages */
  now(): number;
  /** messages this broker, a slave, offered its master: what only it got from clients */
  readonly offeredToMaster: number;
  /** messages this slave forgot because its master's sync showed them settled (issue 27) */
  readonly settledBySync: number;
  /** null without an election block */
  readonly election: ElectionView | null;
  /** retained channels' histories (docs/configuration.md#retention) */
  histories(): ReadonlyArray<readonly [string, HistoryStats]>;
  /** replays served since start, reading now, and the messages they gave */
  readonly replays: { readonly served: number; readonly inProgress: number; readonly messages: number };
  /** with a `cluster` block: its sets as this broker last read them (SPEC §13), else null */
  cluster?(): ClusterStatus | null;
}

/** sets are few (each is configured by an operator), but a series per set is bounded all the same */
const MAX_SET_SERIES = 100;

/** how many series a client can make the broker export (docs/management.md#label-cardinality) */
export interface SeriesLimits {
  readonly maxQueueSeries: number;
  readonly groupSeries: boolean;
  readonly maxGroupSeries: number;
}

const DEFAULT_LIMITS: SeriesLimits = { maxQueueSeries: 1000, groupSeries: false, maxGroupSeries: 200 };

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
 * only the append latency is observed as it happens. Per-queue series are bounded by
 * `maxQueueSeries`, per-group ones are opt-in and bounded too.
 */
export class BrokerMetrics {
  readonly registry = new Registry();
  readonly #appendSeconds: Histogram;
  /** one 10 ms timer: how late it fires is how long the event loop was held up */
  readonly #loopTimer: NodeJS.Timeout;
  #source: MetricsSource | null = null;
  #limits: SeriesLimits;
  /** one scrape reads the queues once, however many metrics use them */
  #scrape: { queues: QueueSeries[]; groups: GroupSeries[]; histories: HistorySeries[] } | null = null;

  constructor(limits: SeriesLimits = DEFAULT_LIMITS) {
    this.#limits = limits;
    const registers = [this.registry];
    const read = () => this.#source;
    const scraped = () => this.#scrapeNow();
    // Node process metrics: CPU, memory, heap, GC, event-loop lag, handles (prom-client's own names)
    collectDefaultMetrics({ register: this.registry });
    for (const [key, name, help] of COUNTERS) {
      new Counter({
        name, help, labelNames: ['queue'], registers,
        collect() {
          this.reset();
          for (const queue of scraped().queues) this.inc({ queue: queue.name }, queue.counters[key]);
        },
      });
    }
    /** one gauge series per queue (or retained channel) of the scrape, labelled `queue` */
    const gaugesOf = <S extends { readonly name: string }>(series: () => readonly S[]) =>
      (name: string, help: string, value: (one: S) => number) =>
        new Gauge({
          name, help, labelNames: ['queue'], registers,
          collect() {
            this.reset();
            for (const one of series()) this.set({ queue: one.name }, value(one));
          },
        });
    const perQueue = gaugesOf<QueueSeries>(() => scraped().queues);
    const perHistory = gaugesOf<HistorySeries>(() => scraped().histories);
    perQueue('whisker_queue_depth', 'Messages not yet delivered to every group (waiting, requeued or delayed)', (q) => q.depth);
    perQueue('whisker_queue_in_flight', 'Deliveries sent and not yet acked', (q) => q.inFlight);
    perQueue('whisker_queue_messages', 'Messages the queue holds, in flight included', (q) => q.size);
    perQueue('whisker_queue_cold_messages', 'Waiting messages whose bodies are on disk only (past memoryWindow), read back as delivery nears', (q) => q.cold);
    perQueue('whisker_queue_oldest_waiting_seconds', 'Age of the oldest message waiting for a delivery (0 when none waits)', (q) => q.oldestWaitingSeconds);
    perQueue('whisker_queue_consumers', 'Consume handlers subscribed to the queue', (q) => q.consumers);
    perQueue('whisker_queue_listeners', 'Listen handlers subscribed to the queue', (q) => q.listeners);
    perHistory('whisker_history_bytes', "Bytes of a retained channel's history on disk (channels[].retention)", (h) => h.bytes);
    perHistory('whisker_history_messages', "Messages in a retained channel's history", (h) => h.messages);
    perHistory('whisker_history_oldest_seconds', "Age of the oldest message a retained channel's history keeps (0 when empty)", (h) => h.oldestSeconds);
    perQueue('whisker_queue_group_in_flight_max', 'Deliveries in flight in the busiest recipient group of the queue', (q) => q.maxGroupInFlight);
    new Gauge({
      name: 'whisker_group_in_flight', help: 'Deliveries in flight per recipient group (opt-in: management.groupSeries)', labelNames: ['queue', 'mode', 'client', 'id'], registers,
      collect() {
        this.reset();
        for (const g of scraped().groups) this.set({ queue: g.queue, mode: g.mode, client: g.client, id: g.id }, g.inFlight);
      },
    });
    const perPeer = (name: string, help: string, value: (peer: PeerSeries) => number) =>
      new Gauge({
        name, help, labelNames: ['peer'], registers,
        collect() {
          this.reset();
          for (const peer of read()?.peers() ?? []) this.set({ peer: peer.serviceId }, value(peer));
        },
      });
    perPeer('whisker_peer_connected', 'Link to the peer is up: 1, else 0', (p) => Number(p.connected));
    perPeer('whisker_peer_role', 'Role of the peer as last heard: 1 master, 0 slave, -1 unknown (link down)', (p) => (p.role === 'master' ? 1 : p.role === 'slave' ? 0 : -1));
    perPeer('whisker_peer_following', 'This broker follows the peer as its master: 1, else 0', (p) => Number(p.following));
    perPeer('whisker_peer_in_step', 'Following the peer and past its sync: 1, else 0', (p) => Number(p.inStep));
    perPeer('whisker_peer_lag_messages', 'Messages and settlements from the peer not applied here yet', (p) => p.lagMessages);
    perPeer('whisker_peer_lag_seconds', 'Age of the oldest of those, in seconds', (p) => p.lagSeconds);
    perPeer('whisker_peer_lag_bytes', 'Size of those frames as read: past limits.maxMirrorBacklogBytes the link to the peer is not read', (p) => p.lagBytes);
    perPeer('whisker_peer_reading_paused', 'The link to the peer is not read (backlog past limits.maxMirrorBacklogBytes): 1, else 0', (p) => Number(p.readingPaused));
    const perPeerCount = (name: string, help: string, value: (peer: PeerSeries) => number) =>
      new Counter({
        name, help, labelNames: ['peer'], registers,
        collect() {
          this.reset();
          for (const peer of read()?.peers() ?? []) this.inc({ peer: peer.serviceId }, value(peer));
        },
      });
    perPeerCount('whisker_peer_syncs_total', 'Syncs from the peer as master finished here since start (full state transfers)', (p) => p.syncs);
    perPeerCount('whisker_peer_resumes_total', 'The peer fenced and elected again: its feed resumed here without a sync', (p) => p.resumes);
    perPeer('whisker_peer_owed_bytes', "Bytes this master owes the peer's link (unsent, and a sync's waiting feed): past limits.maxMirrorLinkBytes it is closed", (p) => p.owedBytes);
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
    single('whisker_master_seen', 'This broker delivers, or has a live link to a peer that does: 1, else 0 (no master in sight)', (s) => Number(s.isMaster || s.peers().some((p) => p.connected && p.role === 'master')));
    single('whisker_store_healthy', 'Message store health: 1 healthy, 0 failed (sends are refused with E_STORE)', (s) => (s.isStoreHealthy ? 1 : 0));
    single('whisker_master_conflict', 'Brokers configured as master that see each other (0 when there is no conflict); the lowest serviceId delivers', (s) => s.conflictingMasters);
    single('whisker_peers_connected', 'Peers this broker has a live link to', (s) => s.peersConnected);
    single('whisker_election_epoch', 'Epoch (etcd revision) of the elected master this broker knows; 0 without one or without an election', (s) => s.election?.epoch ?? 0);
    single('whisker_election_etcd_reachable', 'Election: 1 etcd answers, 0 it does not (the master then stops delivering); 1 without an election', (s) => (s.election?.phase === 'etcd-unreachable' ? 0 : 1));
    single('whisker_election_lease_remaining_seconds', "Election: time left on this broker's own etcd lease, from its last renewal", (s) => (s.election?.leaseRemainingMs ?? 0) / 1000);
    this.#clusterMetrics(registers, read);
    single('whisker_uptime_seconds', 'Seconds since the broker started', (s) => s.uptimeSeconds);
    new Counter({
      name: 'whisker_offered_to_master_total', help: 'Messages this slave offered its master: stored here from a client, not named by the master', registers,
      collect() {
        this.reset();
        this.inc(read()?.offeredToMaster ?? 0);
      },
    });
    new Counter({
      name: 'whisker_sync_settled_total', help: 'Messages this slave forgot after a sync: held here, not named by the master, accepted here in step with it and older than the dedupe window', registers,
      collect() {
        this.reset();
        this.inc(read()?.settledBySync ?? 0);
      },
    });
    new Counter({
      name: 'whisker_replays_total', help: 'Replays of a retained history served since start (refused ones not counted)', registers,
      collect() {
        this.reset();
        this.inc(read()?.replays.served ?? 0);
      },
    });
    new Counter({
      name: 'whisker_replayed_messages_total', help: 'Messages given by replays since start', registers,
      collect() {
        this.reset();
        this.inc(read()?.replays.messages ?? 0);
      },
    });
    single('whisker_replays_in_progress', 'Replays reading a history now', (s) => s.replays.inProgress);
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

  /** per-set series, labelled by set, never by queue (docs/management.md#metrics) */
  #clusterMetrics(registers: Registry[], read: () => MetricsSource | null): void {
    const cluster = () => read()?.cluster?.() ?? null;
    new Gauge({
      name: 'whisker_cluster_info', help: "Cluster: 1, labelled with this broker's own set (none without a cluster block)", labelNames: ['set'], registers,
      collect() {
        this.reset();
        const status = cluster();
        if (status) this.set({ set: status.set }, 1);
      },
    });
    const counted = (name: string, help: string, value: (status: ClusterStatus) => number) =>
      new Gauge({ name, help, registers, collect() { const status = cluster(); this.set(status ? value(status) : 0); } });
    counted('whisker_cluster_sets', 'Cluster: sets with a broker registered in etcd, as this broker last read them (0 without a cluster block)', (s) => s.sets.filter((set) => set.brokers.length > 0).length);
    counted('whisker_cluster_placements_max', 'Cluster: limits.maxPlacements, the most queues placed at once (0 without a cluster block)', (s) => s.maxPlacements);
    const perSet = (name: string, help: string, value: (set: ClusterStatus['sets'][number], status: ClusterStatus) => number) =>
      new Gauge({
        name, help, labelNames: ['set'], registers,
        collect() {
          this.reset();
          const status = cluster();
          for (const set of status?.sets.slice(0, MAX_SET_SERIES) ?? []) this.set({ set: set.name }, value(set, status!));
        },
      });
    perSet('whisker_cluster_placements', 'Cluster: queues placed on the set', (set) => set.placements);
    perSet('whisker_cluster_set_brokers', 'Cluster: brokers of the set registered in etcd (0: the set is down, its queues wait)', (set) => set.brokers.length);
    perSet('whisker_cluster_set_master', "Cluster: 1 when a broker of the set registered as its master, 0 when none did or this broker's etcd does not answer", (set, status) => Number(set.master !== null && status.etcd.reachable));
  }

  /** the broker to read from; set once it exists (the store is wrapped before) */
  bind(source: MetricsSource, limits?: SeriesLimits): void {
    this.#source = source;
    if (limits) this.#limits = limits;
  }

  /** stops sampling the event loop: the broker stopped */
  close(): void {
    clearInterval(this.#loopTimer);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  async text(): Promise<string> {
    this.#scrape = null;
    try {
      return await this.registry.metrics();
    } finally {
      this.#scrape = null;
    }
  }

  #scrapeNow(): { queues: QueueSeries[]; groups: GroupSeries[]; histories: HistorySeries[] } {
    if (this.#scrape) return this.#scrape;
    const source = this.#source;
    if (!source) return { queues: [], groups: [], histories: [] };
    const queues = [...source.queues()];
    const now = source.now();
    this.#scrape = {
      queues: queueSeries(queues, source.subscriberCounts(), now, this.#limits.maxQueueSeries),
      groups: this.#limits.groupSeries ? groupSeries(queues, this.#limits.maxGroupSeries) : [],
      histories: historySeries(source.histories(), now, this.#limits.maxQueueSeries),
    };
    return this.#scrape;
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
      ...(store.messageIds ? { messageIds: store.messageIds } : {}),
      readBodies: (messageIds) => store.readBodies(messageIds),
      ...(store.readBodyTexts ? { readBodyTexts: (messageIds: readonly string[]) => store.readBodyTexts!(messageIds) } : {}),
      isHealthy: () => store.isHealthy(),
      close: () => store.close(),
    };
  }
}
