import { startBroker as start } from './broker/broker.js';
import type { MessageStore } from './broker/store/store.js';
import type { Config } from './config/types.js';
import type { Logger } from './ops/logger.js';
import type { ServiceNotifier } from './ops/notify.js';

// the same shapes as src/broker/broker.ts, restated so the published types stop here
export interface BrokerOptions {
  /** defaults to the durable log store in `dataDirectory/store` */
  store?: MessageStore;
  logger?: Logger;
  now?: () => number;
  notify?: ServiceNotifier;
  /** the control socket in `dataDirectory` (default true) */
  control?: boolean;
  /** reload when the config file changes (default true; only for a config read from a file) */
  watch?: boolean;
}

export interface ReloadResult {
  readonly restartNeeded: string[];
}

export type ReloadOutcome = ({ readonly ok: true } & ReloadResult) | { readonly ok: false; readonly error: string; readonly key?: string };

/**
 * The broker as the package publishes it, for those who embed one (docs/operations.md): the
 * fields an embedder uses, and none whose types need `@types/ws` in the user's project.
 */
export interface Broker {
  readonly host: string;
  /** the port actually bound (useful with port 0) */
  readonly port: number;
  readonly url: string;
  readonly config: Config;
  /** the management HTTP port actually bound, or null without a `management` block */
  readonly managementPort: number | null;
  readonly startedAt: number;
  readonly isStopping: boolean;
  readonly isStoreHealthy: boolean;
  readonly reloadFailures: number;
  readonly lastReloadError: string | null;
  readonly controlSocketPath: string | null;
  /** resolves once the broker has stopped: with what failed, or null */
  readonly closed: Promise<Error | null>;
  reload(config: Config): ReloadResult;
  reloadFromFile(): ReloadOutcome;
  softStop(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts one broker: store loaded, queues rebuilt, socket listening (SPEC §10). */
export const startBroker: (config: Config, options?: BrokerOptions) => Promise<Broker> = start;
