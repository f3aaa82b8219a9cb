/**
 * The broker as the rest of the program sees it: types only. admin.ts, src/ops/ and embedders
 * import these, never the broker's parts (docs/architecture.md#imports).
 */
import type { Config } from '../config/types.js';
import type { ServiceNotifier } from '../ops/notify.js';
import type { Logger } from '../ops/logger.js';
import type { HistoryStats } from './history/history.js';
import type { BrokerState } from './lifecycle.js';
import type { Router } from './messages/router.js';
import type { Peers } from './mirror/peers.js';
import type { ConnectedSession } from './session/ports.js';
import type { MessageStore } from './store/store.js';
import type { PublishedMessage, PublishResult } from '../protocol/frames.js';

export type { BrokerState } from './lifecycle.js';
export type { MasterConflict, PeerStatus } from './mirror/types.js';
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
}

export interface BrokerOptions {
  /** defaults to the durable log store in `dataDirectory/store` */
  store?: MessageStore;
  logger?: Logger;
  now?: () => number;
  /** systemd notifications (src/ops/notify.ts); none by default */
  notify?: ServiceNotifier;
  /** the control socket in `dataDirectory` (default true) */
  control?: boolean;
  /** reload when the config file changes (default true; only for a config read from a file) */
  watch?: boolean;
}

export interface ReloadResult {
  /** changed keys that apply only after a restart (docs/operations.md#what-a-reload-applies) */
  readonly restartNeeded: string[];
}

/** what `reloadFromFile()` gives SIGHUP, the watcher and `whisker reload`: it never throws */
export type ReloadOutcome = ({ readonly ok: true } & ReloadResult) | { readonly ok: false; readonly error: string; readonly key?: string };

export interface Broker {
  readonly host: string;
  /** the port actually bound (useful with port 0) */
  readonly port: number;
  readonly url: string;
  readonly config: Config;
  readonly router: Router;
  readonly sessions: ReadonlySet<ConnectedSession>;
  /** the management HTTP port actually bound, or null without a `management` block */
  readonly managementPort: number | null;
  /** ms since the epoch, from the broker's clock */
  readonly startedAt: number;
  /** running, draining (soft-stop), stopping, stopped (src/broker/lifecycle.ts) */
  readonly state: BrokerState;
  /** true from the start of a soft or hard stop: /health answers 503 (docs/management.md#health) */
  readonly isStopping: boolean;
  readonly isStoreHealthy: boolean;
  /** reloads from the config file refused since start, and the last reason */
  readonly reloadFailures: number;
  readonly lastReloadError: string | null;
  readonly history: HistoryView;
  /** the mirror brokers in `peers`, and the role this broker acts in because of them */
  readonly peers: Peers;
  /** null when started with `control: false` */
  readonly controlSocketPath: string | null;
  /** resolves once the broker has stopped, whoever asked (a signal, `whisker stop`): with what failed, or null */
  readonly closed: Promise<Error | null>;
  /** messages checked, stored and queued as if this client had sent them (the dead-letter replay, docs/management.md#dead-letters) */
  publish(clientName: string, messages: readonly PublishedMessage[]): Promise<PublishResult[]>;
  /** swaps in a new config (validated and compiled first); throws and keeps the old one if bad */
  reload(config: Config): ReloadResult;
  /** reads the config file again and reloads it, or keeps the running config and counts the failure */
  reloadFromFile(): ReloadOutcome;
  /** SPEC §9: refuse connections and sends, let deliveries in flight finish (up to softStopTimeout), stop */
  softStop(): Promise<void>;
  /** at once: connections closed, what is in flight is delivered again after a restart; the store is closed cleanly */
  stop(): Promise<void>;
}
