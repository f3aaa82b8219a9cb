import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';
import { broker, tempDir } from '../support/harness.js';
import { startProcess, whisker } from '../support/broker-process.js';

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

/**
 * issue 29: the README's broker configuration, comments included (test/fixtures/kitten-readme-config.jsonc),
 * and the README client example against the broker it starts, reached as `...@mybroker-service-1`.
 */
describe('Kitten-MQ README configuration', () => {
  const readmeConfig = (dir: string, keysName?: string): string => {
    let text = readFileSync(join(root, 'test/fixtures/kitten-readme-config.jsonc'), 'utf8').replaceAll('/var/www/kitten-mq', dir).replace('"port"            : 1234', '"port"            : 0');
    if (keysName) text = text.replace(`"keysName"              : "${dir}/logs"`, `"keysName"              : "${keysName}"`);
    const path = join(dir, 'kitten-mq.config.json');
    writeFileSync(path, text);
    return path;
  };

  test('as written, it is refused for one thing only: keysName is a path, with the name to write instead', async () => {
    const dir = tempDir('whisker-kitten-conf-');
    const result = await whisker(['start', '-c', readmeConfig(dir)]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toEqual([
      `whisker: config key "keysName": "${dir}/logs" is a path, but keysName is the key pair's file name: put the folder in "keysDirectory" and write only the name here, e.g. "keysName": "logs"`,
    ]);
  });

  test('with keysName a name, the broker starts as mybroker-service-1 (serverId) and the README client example runs against it', async () => {
    const dir = tempDir('whisker-kitten-conf-');
    const broker = await startProcess(readmeConfig(dir, 'broker'), { cwd: dir });
    expect(broker.output()).toContain('Kitten-MQ\'s "serverId" is used as this broker\'s "serviceId" (mybroker-service-1)');
    expect(broker.hostSpec).toMatch(/@mybroker-service-1$/);
    const { stdout, stderr } = await run('kitten-readme.cjs', broker.hostSpec);
    expect(stderr).not.toMatch(/Uncaught|Unhandled|TypeError|ReferenceError|E_SERVICE_ID/);
    expect(stdout).not.toContain('E_SERVICE_ID');
    expect(stdout.match(/client disconnected/g)?.length).toBe(2);
    broker.child.kill('SIGKILL');
  }, 30_000);
});
