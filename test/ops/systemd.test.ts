import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { bin, root, startProcess, whisker, writeConfig } from '../support/broker-process.js';
import { tempDir } from '../support/harness.js';

/**
 * The unit file and the sd_notify(3) messages (SPEC §11, docs/operations.md#systemd): a real
 * broker process, and a real AF_UNIX datagram socket bound on NOTIFY_SOCKET by python3.
 */
const has = (command: string) => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;
const hasAnalyze = has('systemd-analyze');
const hasListener = has('python3') && has('systemd-notify');
if (!hasAnalyze) console.log('skipped: systemd-analyze is absent (Debian package "systemd")');
if (!hasListener) console.log('skipped: the notification test needs python3 and systemd-notify');

// prints each datagram as a JSON line, with its own CLOCK_MONOTONIC in µs at reception
const LISTENER = `
import json, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print(json.dumps({"bound": True}), flush=True)
while True:
    data = s.recv(65536).decode()
    print(json.dumps({"t": time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000, "data": data}), flush=True)
`;

interface Datagram {
  t: number;
  fields: Record<string, string>;
}

const listeners: ChildProcess[] = [];
afterEach(() => {
  for (const listener of listeners.splice(0)) listener.kill('SIGKILL');
});

async function listen(path: string): Promise<{ received: Datagram[]; next(match: (d: Datagram) => boolean): Promise<Datagram> }> {
  const child = spawn('python3', ['-c', LISTENER, path], { stdio: ['ignore', 'pipe', 'inherit'] });
  listeners.push(child);
  const received: Datagram[] = [];
  const waiters: Array<() => void> = [];
  let buffered = '';
  await new Promise<void>((resolve) => {
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = JSON.parse(buffered.slice(0, newline)) as { bound?: boolean; t: number; data: string };
        buffered = buffered.slice(newline + 1);
        if (line.bound) resolve();
        else received.push({ t: line.t, fields: Object.fromEntries(line.data.split('\n').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])) });
        for (const waiter of waiters.splice(0)) waiter();
      }
    });
  });
  let seen = 0;
  const next = (match: (d: Datagram) => boolean) =>
    new Promise<Datagram>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no such datagram; got ${JSON.stringify(received)}`)), 10_000);
      const check = () => {
        while (seen < received.length) {
          const datagram = received[seen++]!;
          if (match(datagram)) {
            clearTimeout(timer);
            return resolve(datagram);
          }
        }
        waiters.push(check);
      };
      check();
    });
  return { received, next };
}

describe('systemd', () => {
  test.skipIf(!hasAnalyze)('systemd/whisker.service passes systemd-analyze verify', () => {
    // verify checks that ExecStart's binary exists: point a copy at this checkout's bin/whisker
    const unit = readFileSync(join(root, 'systemd', 'whisker.service'), 'utf8');
    expect(unit).toContain('ExecStart=/usr/local/bin/whisker start -c /etc/whisker/config.json');
    // a bad config exits 2 (test/cli/cli.test.ts): systemd must not restart it in a loop
    expect(unit).toMatch(/^RestartPreventExitStatus=2$/m);
    expect(unit).toMatch(/^SyslogLevelPrefix=yes$/m);
    const copy = join(tempDir(), 'whisker.service');
    writeFileSync(copy, unit.replaceAll('/usr/local/bin/whisker', bin));
    const result = spawnSync('systemd-analyze', ['verify', copy], { encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  test.skipIf(!hasListener)('READY=1, RELOADING=1 with MONOTONIC_USEC then READY=1 (SIGHUP and whisker reload), WATCHDOG=1, STOPPING=1, in order', async () => {
    const dir = tempDir();
    const socket = join(dir, 'notify.sock');
    const { received, next } = await listen(socket);
    const path = writeConfig(dir, { serviceId: 'sd', socketServer: { port: 0 } });
    const env = { ...process.env, NOTIFY_SOCKET: socket, WATCHDOG_USEC: '300000' };
    const broker = await startProcess(path, { env, args: ['--no-watch'] });
    const pid = String(broker.child.pid);

    const ready = await next((d) => d.fields.READY === '1');
    expect(ready.fields).toMatchObject({ MAINPID: pid, STATUS: expect.stringMatching(/^master sd: 0 clients, 0 queues/) });
    const watchdog = await next((d) => d.fields.WATCHDOG === '1');
    expect(watchdog.fields.STATUS).toContain('master sd');

    broker.child.kill('SIGHUP');
    const reloading = await next((d) => d.fields.RELOADING === '1');
    // CLOCK_MONOTONIC: the same clock as the listener's, read a moment before it received it
    const usec = Number(reloading.fields.MONOTONIC_USEC);
    expect(reloading.t - usec).toBeGreaterThanOrEqual(0);
    expect(reloading.t - usec).toBeLessThan(5_000_000);
    await next((d) => d.fields.READY === '1');

    expect((await whisker(['reload', '-c', path])).code).toBe(0);
    await next((d) => d.fields.RELOADING === '1' && d.fields.MONOTONIC_USEC !== undefined);
    await next((d) => d.fields.READY === '1');

    broker.child.kill('SIGTERM');
    await next((d) => d.fields.STOPPING === '1');
    expect(await broker.exited).toBe(0);

    const story = received.filter((d) => !('WATCHDOG' in d.fields) && !('BARRIER' in d.fields)).map((d) => Object.keys(d.fields).filter((k) => k !== 'MAINPID' && k !== 'STATUS' && k !== 'MONOTONIC_USEC').join('+'));
    expect(story).toEqual(['READY', 'RELOADING', 'READY', 'RELOADING', 'READY', 'STOPPING']);
  });

  test('without NOTIFY_SOCKET nothing is sent and nothing fails', async () => {
    const dir = tempDir();
    const path = writeConfig(dir, { serviceId: 'sd-none', socketServer: { port: 0 } });
    const { NOTIFY_SOCKET: _unset, ...env } = process.env;
    const broker = await startProcess(path, { env });
    broker.child.kill('SIGTERM');
    expect(await broker.exited).toBe(0);
    expect(broker.output()).not.toContain('systemd');
  });
});
