import { startBroker as start } from './server/start.js';
import type { BrokerOptions, EmbeddedBroker } from './broker/embedded.js';
import type { Config } from './config/types.js';

export type { BrokerOptions, ReloadOutcome, ReloadResult } from './broker/embedded.js';

/**
 * The broker as the package publishes it, for those who embed one (docs/operations.md): the
 * fields an embedder uses, and none whose types need `@types/ws` in the user's project.
 */
export type Broker = EmbeddedBroker;

/** Starts one broker: store loaded, queues rebuilt, socket listening (SPEC §10). */
export const startBroker: (config: Config, options?: BrokerOptions) => Promise<Broker> = start;
