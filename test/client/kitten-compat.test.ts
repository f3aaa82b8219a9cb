import { execFile } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';
import { broker, tempDir } from '../support/harness.js';

/**
 * issue #16: programs written for Kitten-MQ 0.12.3 run against Whisker with only the require
 * line changed (docs/migrating-from-kitten.md). They run as CommonJS in a child process, with
 * `whisker-mq` installed as a user has it (node_modules/whisker-mq, the built dist/).
 */
const root = resolve(import.meta.dirname, '../..');

async function run(fixture: string, host: string): Promise<{ stdout: string; stderr: string; ms: number }> {
  const dir = tempDir('whisker-kitten-');
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(root, join(dir, 'node_modules', 'whisker-mq'));
  const started = Date.now();
  const { stdout, stderr } = await promisify(execFile)(process.execPath, [join(root, 'test/fixtures', fixture)], {
    cwd: dir,
    env: { ...process.env, WHISKER_HOST: host, KEYS_DIRECTORY: join(dir, 'keys'), NODE_PATH: join(dir, 'node_modules') },
    timeout: 15_000,
  });
  return { stdout, stderr, ms: Date.now() - started };
}

describe('Kitten-MQ README programs', () => {
  test('the README client example, statement for statement, runs to its end and exits: nothing crashes, nothing is silently lost', async () => {
    const b = await broker();
    const { stdout, stderr, ms } = await run('kitten-readme.cjs', b.hostSpec);
    expect(stderr).not.toMatch(/Uncaught|Unhandled|TypeError|ReferenceError/);
    // the example disconnects at once: its two sends and the connect callbacks are told, with a code
    expect(stdout.match(/code: 'E_DISCONNECTED'/g)?.length).toBe(3); // its 2 sends and connect(config, cb)
    expect(stdout.match(/client disconnected/g)?.length).toBe(2); // the callback and the event
    expect(ms).toBeLessThan(5000); // no timer left behind
  }, 30_000);

  test('a program written from the README alone sends, listens, consumes with done(false, 1), uses an object channel with addId/removeId', async () => {
    const b = await broker();
    const { stdout } = await run('kitten-flow.cjs', b.hostSpec);
    const lines = stdout.trim().split('\n').map((line) => JSON.parse(line) as { what: string; value: unknown });
    const of = (what: string) => lines.filter((line) => line.what === what).map((line) => line.value);
    expect(of('connect callback')).toEqual([null]);
    expect(of('connect event')).toHaveLength(1);
    expect(of('ids')).toEqual([['123', '33', '10']]);
    expect(of('send 120')).toEqual([null]);
    expect(of('listen 120')).toEqual(['coucou']);
    expect(of('consume 120')).toEqual([{ msg: 'coucou', nbRequeues: 0 }, { msg: 'coucou', nbRequeues: 1 }]);
    expect(of('listen object')).toEqual([{ id: '10', msg: 'dix' }]);
    expect(of('listen *')).toEqual(
      expect.arrayContaining([
        { endpoint: 'endpoint', version: 'v1', id: '120', msg: 'coucou' },
        { endpoint: 'endpoint', version: 'v1', id: '22', msg: 'not heard' },
        { endpoint: 'endpoint', version: 'v1', id: '10', msg: 'dix' },
      ]),
    );
    expect(of('disconnect callback')).toEqual([null]);
  }, 30_000);
});
