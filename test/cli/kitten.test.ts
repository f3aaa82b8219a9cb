import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { connect, freePort, Inbox, tempDir } from '../support/harness.js';

/** issue #16: a Kitten-MQ broker config and its operator habits (signals, ./config file) work on Whisker. */
const bin = join(import.meta.dirname, '../..', 'bin', 'whisker');

interface Started {
  child: ChildProcess;
  stderr: () => string;
  waitFor(pattern: RegExp): Promise<void>;
  exited: Promise<number | null>;
}

function start(cwd: string, args: string[] = []): Started {
  const child = spawn(process.execPath, [bin, 'start', ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const waiters: { pattern: RegExp; resolve: () => void }[] = [];
  const onData = (chunk: Buffer) => {
    out += chunk.toString();
    for (const w of waiters.splice(0)) {
      if (w.pattern.test(out)) w.resolve();
      else waiters.push(w);
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return {
    child,
    stderr: () => out,
    exited,
    waitFor: (pattern) =>
      pattern.test(out)
        ? Promise.resolve()
        : new Promise((resolve, reject) => {
            waiters.push({ pattern, resolve });
            void exited.then((code) => reject(new Error(`broker exited ${code} before ${pattern}: ${out}`)));
          }),
  };
}

describe('whisker start as a Kitten-MQ operator knows it', () => {
  test('without -c it uses ./whisker.config.json and says so; it warns about Kitten keys; SIGUSR2 reloads; SIGUSR1 soft-stops with exit 0', async () => {
    const dir = tempDir();
    const port = await freePort();
    const file = join(dir, 'whisker.config.json');
    writeFileSync(file, JSON.stringify({ serviceId: 'kitten', logsDirectory: 'logs', socketServer: { port, logs: 'packets', token: null } }));
    const broker = start(dir, ['--no-watch']);
    try {
      await broker.waitFor(/"url":"ws:\/\/[^"]+"/);
      expect(broker.stderr()).toContain(`whisker: no -c given, using ${file}`);
      expect(broker.stderr()).toContain('ignored: logsDirectory, socketServer.logs, socketServer.token (null)');
      const c = await connect('app', `127.0.0.1:${port}@kitten`);
      const inbox = new Inbox();
      await c.listen('t/v1/1', inbox.listener).ready;
      writeFileSync(file, JSON.stringify({ serviceId: 'kitten', socketServer: { port }, channels: { 't/v1': { map: { n: ['int'] } } } }));
      broker.child.kill('SIGUSR2');
      await broker.waitFor(/SIGUSR2, config reloaded/);
      await expect(c.send('t/v1/1', { n: 'x' })).rejects.toMatchObject({ code: 'E_SCHEMA' }); // the reloaded map applies
      await c.send('t/v1/1', { n: 1 });
      await inbox.waitFor(1);
      await c.disconnect();
      broker.child.kill('SIGUSR1');
      await broker.waitFor(/SIGUSR1, soft stop/);
      expect(await broker.exited).toBe(0);
      expect(broker.stderr()).not.toContain('Debugger listening');
    } finally {
      broker.child.kill('SIGKILL');
    }
  }, 30_000);
});
