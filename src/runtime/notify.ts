import { execFile } from 'node:child_process';
import type { Logger } from './logger.js';

/**
 * The service manager's view of the broker (sd_notify(3), docs/operations.md#systemd):
 * READY=1, RELOADING=1, STOPPING=1, WATCHDOG=1 and STATUS=. Sent only under systemd.
 */
export interface ServiceNotifier {
  ready(status: string): void;
  reloading(): void;
  stopping(): void;
  status(status: string): void;
  /** WATCHDOG=1 (with a fresh STATUS=) every half `WatchdogSec`, when the manager asked for it */
  startWatchdog(status: () => string): void;
  /** stops the watchdog; resolves once every notification queued so far has been sent */
  close(): Promise<void>;
}

export const silentNotifier: ServiceNotifier = {
  ready: () => undefined,
  reloading: () => undefined,
  stopping: () => undefined,
  status: () => undefined,
  startWatchdog: () => undefined,
  close: async () => undefined,
};

/** µs of CLOCK_MONOTONIC, which libuv's hrtime reads on Linux (RELOADING=1 wants it) */
export const monotonicMicros = (): bigint => process.hrtime.bigint() / 1000n;

const oneLine = (text: string) => text.replace(/[\r\n]+/g, ' ');

/**
 * Node has no unix datagram sockets, and the npm `systemd-notify` package cannot send RELOADING,
 * STOPPING or WATCHDOG: this runs systemd's own `systemd-notify --pid=<our pid>` (no shell), one
 * at a time so the manager sees them in order. Its messages come from a child process, hence
 * `NotifyAccess=all` in the unit; it waits for the manager to take each one (the barrier), so
 * none is dropped when the child exits first. Failures are logged, never thrown.
 */
export function systemdNotifier(log: Logger, env: NodeJS.ProcessEnv = process.env, binary = 'systemd-notify'): ServiceNotifier {
  if (!env.NOTIFY_SOCKET) return silentNotifier;
  let chain = Promise.resolve();
  let disabled = false;
  let watchdog: NodeJS.Timeout | null = null;

  const send = (...assignments: string[]) => {
    if (disabled) return;
    chain = chain.then(
      () =>
        new Promise<void>((done) => {
          execFile(binary, [`--pid=${process.pid}`, ...assignments], { env, timeout: 10_000 }, (error, _stdout, stderr) => {
            if (error) {
              const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
              log.error(missing ? 'systemd-notify not found: no more notifications are sent' : 'systemd notification failed', { sent: assignments.join(' '), error: (stderr || error.message).trim() });
              if (missing) disabled = true;
            }
            done();
          });
        }),
    );
  };

  return {
    ready: (status) => send('READY=1', `STATUS=${oneLine(status)}`),
    reloading: () => send('RELOADING=1', `MONOTONIC_USEC=${monotonicMicros()}`),
    stopping: () => send('STOPPING=1', 'STATUS=stopping'),
    status: (status) => send(`STATUS=${oneLine(status)}`),
    startWatchdog(status) {
      const usec = Number(env.WATCHDOG_USEC);
      const forUs = env.WATCHDOG_PID === undefined || Number(env.WATCHDOG_PID) === process.pid;
      if (!Number.isFinite(usec) || usec <= 0 || !forUs || watchdog) return;
      watchdog = setInterval(() => send('WATCHDOG=1', `STATUS=${oneLine(status())}`), Math.max(1, Math.floor(usec / 2000)));
      watchdog.unref();
    },
    async close() {
      if (watchdog) clearInterval(watchdog);
      watchdog = null;
      await chain;
    },
  };
}
