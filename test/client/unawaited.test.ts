import { execFile } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, test } from 'vitest';
import { broker, tempDir } from '../support/harness.js';

/**
 * issue #29 item 1: Kitten-MQ code calls `mq.send(channel, data)` without a callback and without
 * `await`. A refusal must not end the process (exit 1, unhandled rejection): it reaches the
 * `error` event with the message id (a process warning without a listener), while awaited and
 * .catch()ed calls still reject, once. Run in a child process for its real exit code.
 */
const root = resolve(import.meta.dirname, '../..');

interface Run {
  code: number | null;
  lines: Array<{ what: string; value: unknown }>;
  stderr: string;
}

async function run(env: Record<string, string>): Promise<Run> {
  const dir = tempDir('whisker-unawaited-');
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(root, join(dir, 'node_modules', 'whisker-mq'));
  return new Promise((done) => {
    execFile(
      process.execPath,
      [join(root, 'test/fixtures/kitten-unawaited.cjs')],
      { cwd: dir, env: { ...process.env, ...env, KEYS_DIRECTORY: join(dir, 'keys'), NODE_PATH: join(dir, 'node_modules') }, timeout: 15_000 },
      (error, stdout, stderr) => {
        const lines = stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as { what: string; value: unknown });
        done({ code: error ? ((error as { code?: number }).code ?? null) : 0, lines, stderr });
      },
    );
  });
}

async function brokers(): Promise<{ master: string; slave: string }> {
  const rules = [{ client: 'kitten-app', read: ['orders/v1/*'], write: ['orders/v1/*'] }];
  const channels = { 'orders/v1': { map: { qty: ['number'] } } };
  const master = await broker({ rules, channels });
  const slave = await broker({ rules, channels, isMaster: false, serviceId: 'slave-only' });
  return { master: master.hostSpec, slave: slave.hostSpec };
}

describe('a promise nobody awaits', () => {
  test('refused sends (E_FORBIDDEN, E_SCHEMA, E_NO_MASTER) and an addId reach `error` with their message id; the process exits 0; awaited ones reject once', async () => {
    const { master, slave } = await brokers();
    const { code, lines, stderr } = await run({ WHISKER_HOST: master, WHISKER_SLAVE: slave, ERROR_LISTENER: '1' });
    expect(stderr).not.toMatch(/Unhandled|unhandled/);
    expect(code).toBe(0);
    const of = (what: string) => lines.filter((l) => l.what === what).map((l) => l.value);
    const events = of('error event') as Array<{ code: string; messageId?: string }>;
    // one event per unawaited failure, none for the awaited or caught ones
    expect(events.map((e) => e.code).sort()).toEqual(['E_BAD_CHANNEL', 'E_FORBIDDEN', 'E_NO_MASTER', 'E_SCHEMA']);
    for (const e of events.filter((e) => e.code !== 'E_BAD_CHANNEL')) expect(e.messageId).toMatch(/^[0-9a-f]{32}$/);
    expect(of('awaited')).toEqual(['E_FORBIDDEN']);
    expect(of('caught')).toEqual(['E_SCHEMA']);
    expect(of('sent')).toEqual(['string']);
    expect(of('end')).toEqual([null]);
  }, 30_000);

  test('without an `error` listener each unawaited failure is a process warning, and the process still exits 0', async () => {
    const { master, slave } = await brokers();
    const { code, lines, stderr } = await run({ WHISKER_HOST: master, WHISKER_SLAVE: slave });
    expect(code).toBe(0);
    expect(lines.map((l) => l.what)).toContain('end');
    for (const c of ['E_FORBIDDEN', 'E_SCHEMA', 'E_NO_MASTER', 'E_BAD_CHANNEL']) expect(stderr).toContain(`[${c}]`);
    expect(stderr).not.toMatch(/Unhandled|unhandled/);
  }, 30_000);

  test('a burst of one failure is one warning and one line counting the repeats, not a line per message', async () => {
    const { master, slave } = await brokers();
    const { code, stderr } = await run({ WHISKER_HOST: master, WHISKER_SLAVE: slave, REPEATS: '300' });
    expect(code).toBe(0);
    expect(stderr.match(/\[E_FORBIDDEN\] WhiskerError/g)).toHaveLength(1);
    expect(stderr).toMatch(/300 more E_FORBIDDEN failures like the one above within 1 s/);
    expect(stderr.split('\n').length).toBeLessThan(60);
  }, 30_000);
});
