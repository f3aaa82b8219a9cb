import { type Broker, startBroker } from '../broker/broker.js';
import { ConfigError, defaultConfig, loadConfigFile } from '../config/load.js';
import type { Config } from '../config/types.js';
import { createLogger } from '../ops/logger.js';
import { systemdNotifier } from '../ops/notify.js';

/**
 * `whisker start`: runs in the foreground until stopped. SIGTERM and SIGINT soft-stop (a second
 * one stops at once), SIGHUP reloads; `whisker stop` and `soft-stop` end it too. Exit 0 once the
 * store is closed (docs/operations.md#stopping).
 */
export async function runStart(configPath: string | undefined, options: { watch?: boolean } = {}): Promise<number> {
  let config: Config;
  try {
    config = configPath ? loadConfigFile(configPath) : defaultConfig();
  } catch (error) {
    process.stderr.write(`whisker: ${(error as Error).message}\n`);
    return 2;
  }
  // listen for signals before the broker starts: a stop asked for during start-up is not lost
  let broker: Broker | null = null;
  let signals = 0;
  const onStop = (signal: NodeJS.Signals) => {
    signals++;
    if (!broker) return;
    process.stderr.write(`whisker: ${signal}, ${signals === 1 ? `soft stop (up to ${broker.config.softStopTimeout} s; again to stop at once)` : 'stopping at once'}\n`);
    (signals === 1 ? broker.softStop() : broker.stop()).catch(() => undefined); // the failure is in `closed`
  };
  const onReload = () => {
    if (!broker) return;
    const outcome = broker.reloadFromFile();
    if (outcome.ok) process.stderr.write(`whisker: SIGHUP, config reloaded${outcome.restartNeeded.length > 0 ? `; needs a restart: ${outcome.restartNeeded.join(', ')}` : ''}\n`);
    else process.stderr.write(`whisker: SIGHUP, config refused, the running one stays: ${outcome.error}\n`);
  };
  process.on('SIGINT', onStop);
  process.on('SIGTERM', onStop);
  process.on('SIGHUP', onReload);
  try {
    const log = createLogger(config.logLevel);
    const notify = systemdNotifier(log);
    try {
      broker = await startBroker(config, { logger: log, notify, watch: options.watch !== false });
    } catch (error) {
      process.stderr.write(`whisker: ${(error as Error).message}\n`);
      await notify.close();
      return error instanceof ConfigError ? 2 : 1;
    }
    if (!configPath) process.stderr.write(`whisker: no config given, running the built-in default on ${broker.url}\n`);
    if (signals > 0) (signals === 1 ? broker.softStop() : broker.stop()).catch(() => undefined);
    const failure = await broker.closed;
    await notify.close();
    return failure ? 1 : 0;
  } finally {
    process.off('SIGINT', onStop);
    process.off('SIGTERM', onStop);
    process.off('SIGHUP', onReload);
  }
}
