import { describe, expect, test } from 'vitest';
import { createLogger } from '../../src/ops/logger.js';

describe('logger', () => {
  test('JSON lines with a level name, at the configured level, changed by setLevel', () => {
    const lines: string[] = [];
    const log = createLogger('info', { write: (line) => void lines.push(line) });
    log.debug('hidden');
    log.info('shown', { queue: 'a/v1' });
    log.setLevel('debug');
    log.debug('now shown');
    log.setLevel('silent');
    log.error('silenced');
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(parsed).toEqual([
      { level: 'info', time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), pid: process.pid, queue: 'a/v1', msg: 'shown' },
      { level: 'debug', time: expect.any(String), pid: process.pid, msg: 'now shown' },
    ]);
    expect(lines.every((line) => line.endsWith('\n'))).toBe(true);
  });
});
