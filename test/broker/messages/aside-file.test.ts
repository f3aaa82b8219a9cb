import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { AsideFile } from '../../../src/broker/messages/aside-file.js';
import { createLogger } from '../../../src/runtime/logger.js';

/** `<dataDirectory>/aside.json`: the queues moving to this set whose sends wait aside (docs/operations.md#moving-a-queue) */
describe('aside.json', () => {
  const path = () => join(mkdtempSync(join(tmpdir(), 'whisker-aside-')), 'aside.json');

  test('what is saved is loaded back; none saved, none loaded', () => {
    const file = new AsideFile(path(), createLogger('silent'));
    expect(file.load()).toEqual([]);
    file.save([{ queue: 'orders/v1', before: 4_194_304 }, { queue: 'jobs/v2', before: 0 }]);
    expect(file.load()).toEqual([{ queue: 'orders/v1', before: 4_194_304 }, { queue: 'jobs/v2', before: 0 }]);
    file.save([]);
    expect(file.load()).toEqual([]);
  });

  test('a file not understood loads as none; rows with a seq a range cannot follow exactly are left out', () => {
    const at = path();
    const file = new AsideFile(at, createLogger('silent'));
    writeFileSync(at, '{"version":1,"aside":[');
    expect(file.load()).toEqual([]);
    writeFileSync(at, JSON.stringify({ version: 99, aside: [{ queue: 'a/v1', before: 1 }] }));
    expect(file.load()).toEqual([]);
    writeFileSync(at, JSON.stringify({ version: 1, aside: [{ queue: 'a/v1', before: 2 ** 53 }, { queue: 'b/v1', before: -1 }, { queue: 'c/v1', before: 1.5 }, { queue: 7, before: 1 }, { queue: 'd/v1', before: 10 }] }));
    expect(file.load()).toEqual([{ queue: 'd/v1', before: 10 }]);
    // saving replaces the whole file
    file.save([{ queue: 'e/v1', before: 3 }]);
    expect(JSON.parse(readFileSync(at, 'utf8'))).toEqual({ version: 1, aside: [{ queue: 'e/v1', before: 3 }] });
  });
});
