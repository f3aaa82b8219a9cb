// Loaded into a real broker with `node --import` (NODE_OPTIONS) by a test: once the file
// WHISKER_TEST_PAUSES_FILE exists, the event loop runs JavaScript WHISKER_TEST_PAUSE_MS at a
// time, every turn, as a busy broker on a loaded machine does (issue 27's nemesis at load 20-40).
import { existsSync } from 'node:fs';

const pauseMs = Number(process.env.WHISKER_TEST_PAUSE_MS ?? 0);
const file = process.env.WHISKER_TEST_PAUSES_FILE;
if (pauseMs > 0 && file) {
  const waiting = setInterval(() => {
    if (!existsSync(file)) return;
    clearInterval(waiting);
    setInterval(() => {
      const until = performance.now() + pauseMs;
      while (performance.now() < until);
    }, 10).unref();
  }, 100);
  waiting.unref();
}
