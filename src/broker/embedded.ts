/**
 * The broker as an embedder sees it: the shapes the package publishes (src/embed.ts) and that
 * src/broker/api.ts extends. Nothing here may reach a type that needs `@types/ws`.
 */
import type { Config } from '../config/types.js';
import type { Logger } from '../runtime/logger.js';
import type { ServiceNotifier } from '../runtime/notify.js';
import type { MessageStore } from './store/store.js';

export interface BrokerOptions {
  /** defaults to the durable log store in `dataDirectory/store` */
  store?: MessageStore;
  logger?: Logger;
  now?: () => number;
  /** systemd notifications (src/runtime/notify.ts); none by default */
  notify?: ServiceNotifier;
  /** the control socket in `dataDirectory` (default true) */
  control?: boolean;
  /** reload when the config file changes (default true; only for a config read from a file) */
  watch?: boolean;
}

export interface ReloadResult {
  /** changed keys that apply only after a restart (docs/operations.md#what-a-reload-applies) */
  readonly restartNeeded: string[];
  /** Kitten-MQ keys of the file: serverId used as serviceId, keys ignored (docs/migrating-from-kitten.md) */
  readonly warnings: string[];
}

/** what `reloadFromFile()` gives SIGHUP, the watcher and `whisker reload`: it never throws */
export type ReloadOutcome = ({ readonly ok: true } & ReloadResult) | { readonly ok: false; readonly error: string; readonly key?: string };

/** the fields an embedder uses (docs/operations.md) */
export interface EmbeddedBroker {
  readonly host: string;
  /** the port actually bound (useful with port 0) */
  readonly port: number;
  readonly url: string;
  readonly config: Config;
  /** the management HTTP port actually bound, or null without a `management` block */
  readonly managementPort: number | null;
  /** ms since the epoch, from the broker's clock */
  readonly startedAt: number;
  /** true from the start of a soft or hard stop: /health answers 503 (docs/management.md#health) */
  readonly isStopping: boolean;
  readonly isStoreHealthy: boolean;
  /** reloads from the config file refused since start, and the last reason */
  readonly reloadFailures: number;
  readonly lastReloadError: string | null;
  /** null when started with `control: false` */
  readonly controlSocketPath: string | null;
  /** resolves once the broker has stopped, whoever asked (a signal, `whisker stop`): with what failed, or null */
  readonly closed: Promise<Error | null>;
  /** swaps in a new config (validated and compiled first); throws and keeps the old one if bad */
  reload(config: Config): ReloadResult;
  /** reads the config file again and reloads it, or keeps the running config and counts the failure */
  reloadFromFile(): ReloadOutcome;
  /** SPEC §9: refuse connections and sends, let deliveries in flight finish (up to softStopTimeout), stop */
  softStop(): Promise<void>;
  /** at once: connections closed, what is in flight is delivered again after a restart; the store is closed cleanly */
  stop(): Promise<void>;
}
