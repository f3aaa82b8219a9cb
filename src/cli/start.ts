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
  let broker;
  try {
    broker = await startBroker(config);
  } catch (error) {
    process.stderr.write(`whisker: ${(error as Error).message}\n`);
    return error instanceof ConfigError ? 2 : 1;
  }
  if (!configPath) process.stderr.write(`whisker: no config given, running the built-in default on ${broker.url}\n`);
  return new Promise((resolve) => {
    const shutdown = (signal: string) => {
      process.stderr.write(`whisker: ${signal}, stopping\n`);
      broker.stop().then(
        () => resolve(0),
        () => resolve(1),
      );
    };
    process.once('SIGINT', () => shutdown('SIGINT'));
    process.once('SIGTERM', () => shutdown('SIGTERM'));
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
  });
}
