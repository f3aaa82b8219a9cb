import { spawn } from 'node:child_process';
import { closeSync, fstatSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { createLogger, stdoutIsJournal } from '../../src/runtime/logger.js';
import { bin, writeConfig } from '../support/broker-process.js';
import { tempDir, until } from '../support/harness.js';

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

describe('logger under journald', () => {
  test('with the syslog prefix each line starts with its priority, so journalctl -p err finds the errors', () => {
    const lines: string[] = [];
    const log = createLogger('debug', { write: (line) => void lines.push(line) }, { syslogPrefix: true });
    log.error('bad');
    log.warn('odd');
    log.info('fine');
    log.debug('detail');
    expect(lines.map((l) => l.slice(0, l.indexOf('{')))).toEqual(['<3>', '<4>', '<6>', '<7>']);
    expect(JSON.parse(lines[0]!.slice(3))).toMatchObject({ level: 'error', msg: 'bad' });
  });

  test('a broker whose stdout is the JOURNAL_STREAM prefixes its lines; redirected elsewhere it does not', async () => {
    const dir = tempDir();
    const path = writeConfig(dir, { serviceId: 'journal', socketServer: { port: 0 } });
    const outPath = join(dir, 'stdout');
    const fd = openSync(outPath, 'w');
    const stat = fstatSync(fd);
    const child = spawn(process.execPath, [bin, 'start', '-c', path, '--no-watch'], { stdio: ['ignore', fd, 'pipe'], env: { ...process.env, JOURNAL_STREAM: `${stat.dev}:${stat.ino}` } });
    closeSync(fd);
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      await until(() => readFileSync(outPath, 'utf8').includes('broker started'), 10_000, 'broker started');
      writeFileSync(path, '{ not json');
      child.kill('SIGHUP');
      await until(() => readFileSync(outPath, 'utf8').includes('config refused'), 10_000, 'the refused reload logged');
    } finally {
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
    const lines = readFileSync(outPath, 'utf8').trim().split('\n');
    expect(lines.every((l) => /^<[2-7]>\{"level":"/.test(l))).toBe(true);
    expect(lines.find((l) => l.includes('broker started'))).toMatch(/^<6>/);
    expect(lines.find((l) => l.includes('config refused'))).toMatch(/^<[34]>/);
    expect(stdoutIsJournal({ JOURNAL_STREAM: '1:2' }, 1)).toBe(false);
    expect(stdoutIsJournal({}, 1)).toBe(false);
  });
});
