// A Whisker broker with the in-memory store (MemoryStore: nothing written to disk, the queues
// lost on a restart), for the bench's "memory" rows. The store is not a config key: it is an
// option of startBroker() for those who embed the broker (docs/configuration.md has no key for
// it), so this script does what `whisker start -c CONFIG` does, with that option.
// Usage: node bench/memory-broker.mjs CONFIG.json
import { loadConfigFile, startBroker } from '../dist/index.js';
import { MemoryStore } from '../dist/broker/store/memory.js';
import { createLogger } from '../dist/runtime/logger.js';

const config = loadConfigFile(process.argv[2]);
const broker = await startBroker(config, { store: new MemoryStore(), logger: createLogger(config.logLevel), watch: false });
let signals = 0;
const onStop = () => {
  signals++;
  (signals === 1 ? broker.softStop() : broker.stop()).catch(() => undefined);
};
process.on('SIGTERM', onStop);
process.on('SIGINT', onStop);
process.exitCode = (await broker.closed) ? 1 : 0;
