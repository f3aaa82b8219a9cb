import { afterEach, beforeEach, expect } from 'vitest';

/**
 * Fails a test on an uncaught exception or unhandled rejection in this process, where the
 * in-process broker lives. Import it FIRST in a test file: vitest runs afterEach hooks in
 * reverse order, so this check then runs after every other cleanup, and a failure here
 * cannot skip them.
 */
const uncaught: unknown[] = [];
const record = (error: unknown) => {
  uncaught.push(error);
  console.error('uncaught in the test process:', error); // visible even if a later hook times out
};

beforeEach(() => {
  uncaught.length = 0;
  process.on('uncaughtException', record);
  process.on('unhandledRejection', record);
});

afterEach(() => {
  process.off('uncaughtException', record);
  process.off('unhandledRejection', record);
  const seen = uncaught.splice(0).map((error) => (error instanceof Error ? `${error.name}: ${error.message}\n${error.stack?.split('\n').slice(1, 4).join('\n')}` : String(error)));
  expect(seen, 'uncaught exceptions in this process (the broker runs in it)').toEqual([]);
});
