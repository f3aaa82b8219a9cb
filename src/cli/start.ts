import { startBroker } from '../broker/broker.js';
import { ConfigError, defaultConfig, loadConfigFile } from '../config/load.js';
import type { Config } from '../config/types.js';

/** `whisker start`: runs until SIGINT or SIGTERM, then stops cleanly and exits 0. */
export async function runStart(configPath: string | undefined): Promise<number> {
  let config: Config;
  try {
    config = configPath ? loadConfigFile(configPath) : defaultConfig();
  } catch (error) {
    process.stderr.write(`whisker: ${(error as Error).message}\n`);
    return 2;
  }
  // listen for signals before the broker starts: a stop asked for during start-up is not lost
  let stopSignal: string | null = null;
  let onStop: (signal: string) => void = (signal) => (stopSignal = signal);
  process.once('SIGINT', () => onStop('SIGINT'));
  process.once('SIGTERM', () => onStop('SIGTERM'));

  let broker;
  try {
    broker = await startBroker(config);
  } catch (error) {
    process.stderr.write(`whisker: ${(error as Error).message}\n`);
    return error instanceof ConfigError ? 2 : 1;
  }
  if (!configPath) process.stderr.write(`whisker: no config given, running the built-in default on ${broker.url}\n`);
  // a bad file is refused and the running config stays (SPEC §10)
  process.on('SIGHUP', () => {
    if (!configPath) return;
    try {
      broker.reload(loadConfigFile(configPath));
      process.stderr.write('whisker: SIGHUP, config reloaded\n');
    } catch (error) {
      process.stderr.write(`whisker: SIGHUP, config refused, the running one stays: ${(error as Error).message}\n`);
    }
  });
  const signal = await new Promise<string>((resolve) => {
    if (stopSignal) resolve(stopSignal);
    else onStop = resolve;
  });
  process.stderr.write(`whisker: ${signal}, stopping\n`);
  try {
    await broker.stop();
    return 0;
  } catch {
    return 1;
  }
}
