/**
 * One broker as `whisker start` and embedders run it (SPEC §10, docs/operations.md): the broker
 * (src/broker/) with what runs beside it (src/ops/): the control socket, the management HTTP
 * and its metrics. The one place above both: the broker imports nothing of ops/, ops/ reads the
 * broker through src/broker/api.ts, and this file hangs the one on the other's hooks.
 */
import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import { Broker, type BrokerHooks, type BrokerOptions } from '../broker/broker.js';
import type { Config } from '../config/types.js';
import { controlHandler } from '../ops/admin.js';
import { ControlServer, controlSocketPath } from '../ops/control.js';
import { bindManagement, type ManagementServer, startManagement } from '../ops/http.js';
import { BrokerMetrics } from '../ops/metrics.js';
import { createLogger } from '../runtime/logger.js';

export type { Broker, BrokerOptions } from '../broker/broker.js';

/** `fn` run once; later calls get the first call's promise */
function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | null = null;
  return () => (done ??= fn());
}

const closeServer = (server: Server | null) => new Promise<void>((resolve) => (server?.listening ? server.close(() => resolve()) : resolve()));

/** Starts one broker: store loaded, queues rebuilt, socket listening (SPEC §10); control socket and management with it. */
export async function startBroker(config: Config, options: BrokerOptions = {}): Promise<Broker> {
  const log = options.logger ?? createLogger(config.logLevel);
  mkdirSync(config.dataDirectory, { recursive: true, mode: 0o700 });
  // before the store opens: a second broker on the same data directory stops here
  const control = options.control === false ? null : await ControlServer.open(controlSocketPath(config.dataDirectory));
  // the ports are bound before anything is claimed: a port in use stops the start with no role announced
  let bound: Server | null = null;
  try {
    bound = config.management ? await bindManagement(config.management) : null;
  } catch (error) {
    await control?.close();
    throw error;
  }
  // appends are timed for the metrics only when something serves them
  const metrics = config.management ? new BrokerMetrics() : null;
  let management: ManagementServer | null = null;
  const closeOps = once(async () => {
    await (management ? management.close() : closeServer(bound));
    metrics?.close();
  });
  const closeControl = once(async () => control?.close());
  const hooks: BrokerHooks = {
    controlSocketPath: control?.path ?? null,
    managementPort: () => management?.port ?? null,
    ...(metrics ? { wrapStore: (store) => metrics.timeAppends(store) } : {}),
    attach: async (broker) => {
      if (config.management && metrics) management = await startManagement(broker, config.management, { metrics, log, now: options.now ?? Date.now, ...(bound ? { bound } : {}) });
      control?.handle(controlHandler(broker, log));
    },
    closeFirst: closeOps,
    closeLast: closeControl,
  };
  try {
    return await Broker.start(config, { ...options, logger: log }, hooks);
  } catch (error) {
    // a start that failed before the broker ran never reached its stop: these are still open
    await Promise.all([closeOps(), closeControl()]);
    throw error;
  }
}
