/**
 * The broker as the rest of the program sees it: types only. admin.ts, src/ops/ and embedders
 * import these, never the broker's parts (docs/architecture.md#imports).
 */
import type { HistoryStats } from './history/history.js';
import type { EmbeddedBroker } from './embedded.js';
import type { BrokerState } from './lifecycle.js';
import type { Router } from './messages/router.js';
import type { Peers } from './mirror/peers.js';
import type { ElectionView } from './mirror/types.js';
import type { ConnectedSession } from './session/ports.js';
import type { PublishedMessage, PublishResult } from '../protocol/frames.js';

export type { BrokerState } from './lifecycle.js';
export type { ElectionView, MasterConflict, PeerStatus } from './mirror/types.js';
export type { QueueCounters, QueueSettings, MessageSummary } from './queue/types.js';
export type { MessageStore, StoredMessage } from './store/store.js';
export type { HistoryStats } from './history/history.js';

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

/** the embedder's view, and what admin, ops and the tests read of the parts */
export interface Broker extends EmbeddedBroker {
  readonly router: Router;
  readonly sessions: ReadonlySet<ConnectedSession>;
  /** running, draining (soft-stop), stopping, stopped (src/broker/lifecycle.ts) */
  readonly state: BrokerState;
  readonly history: HistoryView;
  /** the mirror brokers in `peers`, and the role this broker acts in because of them */
  readonly peers: Peers;
  /** with an `election` block: the election as this broker sees it, else null */
  readonly election: ElectionView | null;
  /** elected master: stop delivering, let deliveries in flight be acked, give the lease up */
  stepDown(): Promise<{ ok: boolean; error?: string }>;
  /** messages checked, stored and queued as if this client had sent them (the dead-letter replay, docs/management.md#dead-letters) */
  publish(clientName: string, messages: readonly PublishedMessage[]): Promise<PublishResult[]>;
}
