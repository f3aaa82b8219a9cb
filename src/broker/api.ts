import type { ClusterView } from './cluster/cluster.js';
import type { PlacementList, PlacementQuery } from './cluster/listing.js';
/**
 * The broker as the rest of the program sees it: types only. src/ops/, src/server/ and
 * embedders import these, never the broker's parts (docs/architecture.md#imports).
 */
import type { HistoryStats } from './history/history.js';
import type { EmbeddedBroker } from './embedded.js';
import type { BrokerState } from './lifecycle.js';
import type { ReservationRecord } from './store/reservation-file.js';
import type { RevokeOutcome } from './mirror/key-sync.js';
import type { Peers } from './mirror/peers.js';
import type { Queue } from './queue/queue.js';
import type { ElectionView } from './mirror/types.js';
import type { ConnectedSession } from './session/ports.js';
import type { PublishedMessage, PublishResult } from '../protocol/frames.js';
import type { MessageStore, StoredMessage } from './store/store.js';

export type { BrokerState } from './lifecycle.js';
export type { ElectionView, MasterConflict, PeerStatus } from './mirror/types.js';
export type { QueueCounters, QueueSettings, MessageSummary } from './queue/types.js';
export type { MessageStore, StoredMessage } from './store/store.js';
export type { ReservationRecord } from './store/reservation-file.js';
export type { RevokeOutcome } from './mirror/key-sync.js';
export type { HistoryStats } from './history/history.js';
export type { ClusterView } from './cluster/cluster.js';
export type { PlacementList, PlacementQuery } from './cluster/listing.js';
export type { BrokerStats, Member } from './cluster/types.js';

/** retained channels' history as the operator surface reads and trims it (docs/configuration.md#retention) */
export interface HistoryView {
  list(): Array<[queue: string, stats: HistoryStats]>;
  stats(queue: string): HistoryStats | null;
  /** the channel's history emptied; bytes freed */
  clear(queue: string): Promise<number>;
  /** replays served since start */
  readonly replays: number;
  /** replays reading now */
  readonly replaying: number;
  /** messages given by replays since start */
  readonly replayedMessages: number;
}

export type { BrokerOptions, ReloadOutcome, ReloadResult } from './embedded.js';

/** one queue as ops/ reads it: counters, settings and listings; nothing that changes it */
export type QueueView = Pick<
  Queue,
  'name' | 'depth' | 'size' | 'storedCount' | 'coldSize' | 'inFlightCount' | 'counters' | 'settings' | 'oldestWaitingAcceptedAt' | 'inFlightByGroup' | 'listIds' | 'idCounts' | 'inFlightFor' | 'messages' | 'message'
>;

/** the mirror brokers as ops/ reads them (SPEC §9) */
export type PeerView = Pick<Peers, 'conflict' | 'offeredToMaster' | 'settledBySync' | 'status' | 'degradedReason'>;

/** registered client keys as `whisker keys list` shows them, with the revoked count */
export interface KeyList {
  readonly keys: Array<{ name: string; fingerprint: string | null }>;
  readonly revoked: number;
}

/** the embedder's view, and what ops/ reads of a running broker and asks of it */
export interface Broker extends EmbeddedBroker {
  /** every queue by name, read-only */
  readonly queues: ReadonlyMap<string, QueueView>;
  /** delivers now (master), or holds what its master feeds it (slave) */
  readonly isMaster: boolean;
  /** deliveries in flight, every queue */
  readonly inFlightCount: number;
  /** bodies the queues left on disk, in the order asked (undefined: gone) */
  readBodies(messageIds: readonly string[]): Promise<unknown[]>;
  /** every message stored from now on, until the returned function is called (`whisker tail`) */
  tap(listener: (message: StoredMessage) => void): () => void;
  /** one waiting message settled away by the operator (dead-letter purge); false when not waiting */
  removeMessage(queue: string, messageId: string): boolean;
  /** the queue's waiting messages (of one id, when given) settled away; how many */
  purgeQueue(queue: string, id?: string): number;
  readonly sessions: ReadonlySet<ConnectedSession>;
  /** running, draining (soft-stop), stopping, stopped (src/broker/lifecycle.ts) */
  readonly state: BrokerState;
  readonly history: HistoryView;
  /** the mirror brokers in `peers`, and the role this broker acts in because of them */
  readonly peers: PeerView;
  /** with an `election` block: the election as this broker sees it, else null */
  readonly election: ElectionView | null;
  /** with a `cluster` block: sets, brokers, masters and placements as this broker sees them (SPEC §13), else null */
  readonly cluster: ClusterView | null;
  /** `whisker move` (SPEC §13): resolves once `queue` is on set `to`; `progress` hears each phase */
  moveQueue(queue: string, to: string, progress: (phase: string) => void, timeoutMs: number): Promise<{ from: string; to: string }>;
  /** with a `cluster` block: which queue is on which set, the first `limit` by name (SPEC §13), else null */
  clusterPlacements(query: PlacementQuery): PlacementList | null;
  /** elected master: stop delivering, let deliveries in flight be acked, give the lease up */
  stepDown(): Promise<{ ok: boolean; error?: string }>;
  /** the registered client keys (docs/security.md#keys) */
  listKeys(): KeyList;
  /** the name's key refused from now on on every mirror, its connections closed, its reserved ids freed; null without a key (SPEC §4) */
  revokeKey(name: string): Promise<(RevokeOutcome & { releasedReservations: number }) | null>;
  /** reserved (`!`) ids with their owners (SPEC §5) */
  listReservations(): ReservationRecord[];
  /** the reserved id freed for the next subscriber, of any name; undefined when not reserved */
  releaseReservation(channel: string): ReservationRecord | undefined;
  /** messages checked, stored and queued as if this client had sent them (the dead-letter replay, docs/management.md#dead-letters) */
  publish(clientName: string, messages: readonly PublishedMessage[]): Promise<PublishResult[]>;
}

/**
 * What the start-up module above the broker (src/server/start.ts) hangs on it: the control
 * socket, the management HTTP and its metrics are no part of the broker and it imports none of
 * them, but they start and stop with it, in this order.
 */
export interface BrokerHooks {
  /** the control socket's path (`controlSocketPath`), null without one */
  readonly controlSocketPath?: string | null;
  /** the management HTTP port bound (`managementPort`), null without one */
  managementPort?(): number | null;
  /** the store the router appends to, wrapped (the metrics time appends) */
  wrapStore?(store: MessageStore): MessageStore;
  /** once the broker serves, before `broker started` is logged and systemd told; a throw stops the broker and fails the start */
  attach?(broker: Broker): Promise<void>;
  /** at stop, before the broker's own parts close */
  closeFirst?(): Promise<void>;
  /** at stop, after every part closed and before `closed` resolves (`whisker soft-stop` sees the control socket close once everything is written) */
  closeLast?(): Promise<void>;
}
