import { type Broker, startBroker } from '../server/start.js';
import { ConfigError, defaultConfig, kittenWarnings, loadConfigFile } from '../config/load.js';
import type { Config } from '../config/types.js';
import { createLogger } from '../runtime/logger.js';
import { systemdNotifier } from '../runtime/notify.js';

function warnIgnored(config: Config): void {
  for (const warning of kittenWarnings(config)) process.stderr.write(`whisker: warning: ${warning}\n`);
}

/**
 * `whisker start`: runs in the foreground until stopped. SIGTERM, SIGINT and SIGUSR1 (as
 * Kitten-MQ) soft-stop (a second one stops at once), SIGHUP and SIGUSR2 (as Kitten-MQ) reload;
 * `whisker stop` and `soft-stop` end it too. Exit 0 once the store is closed
 * (docs/operations.md#stopping). `implicit`: the path is ./whisker.config.json, found without -c.
 */
export async function runStart(configPath: string | undefined, options: { watch?: boolean; implicit?: boolean } = {}): Promise<number> {
  let config: Config;
  try {
    config = configPath ? loadConfigFile(configPath) : defaultConfig();
  } catch (error) {
    process.stderr.write(`whisker: ${(error as Error).message}\n`);
    return 2;
  }
  if (options.implicit && config.configPath) process.stderr.write(`whisker: no -c given, using ${config.configPath}\n`);
  warnIgnored(config);
  // listen for signals before the broker starts: a stop asked for during start-up is not lost
  let broker: Broker | null = null;
  let signals = 0;
  const onStop = (signal: NodeJS.Signals) => {
    signals++;
    if (!broker) return;
    process.stderr.write(`whisker: ${signal}, ${signals === 1 ? `soft stop (up to ${broker.config.softStopTimeout} s; again to stop at once)` : 'stopping at once'}\n`);
    (signals === 1 ? broker.softStop() : broker.stop()).catch(() => undefined); // the failure is in `closed`
  };
  const onReload = (signal: NodeJS.Signals) => {
    if (!broker) return;
    const outcome = broker.reloadFromFile();
    if (outcome.ok) process.stderr.write(`whisker: ${signal}, config reloaded${outcome.restartNeeded.length > 0 ? `; needs a restart: ${outcome.restartNeeded.join(', ')}` : ''}\n`);
    else process.stderr.write(`whisker: ${signal}, config refused, the running one stays: ${outcome.error}\n`);
    if (outcome.ok) warnIgnored(broker.config);
  };
  // a SIGUSR1 listener also keeps Node from opening its inspector on that signal
  const stopSignals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGUSR1'];
  const reloadSignals: NodeJS.Signals[] = ['SIGHUP', 'SIGUSR2'];
  for (const signal of stopSignals) process.on(signal, onStop);
  for (const signal of reloadSignals) process.on(signal, onReload);
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
    for (const signal of stopSignals) process.off(signal, onStop);
    for (const signal of reloadSignals) process.off(signal, onReload);
  }
}
