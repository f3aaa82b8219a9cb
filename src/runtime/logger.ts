import { fstatSync } from 'node:fs';
import { pino } from 'pino';
import type { LogLevel } from '../config/types.js';

/** JSON lines on stdout (journald-friendly); never message bodies at info level (SPEC §11). */
export interface Logger {
  error(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  debug(msg: string, fields?: Record<string, unknown>): void;
  setLevel(level: LogLevel): void;
}

/** where lines go: stdout by default (pino's synchronous writer, so a crash loses no line) */
export interface LogDestination {
  write(line: string): void;
}

/** syslog priorities (sd-daemon(3)): `<3>` before a line makes journald file it as an error */
const PRIORITY: Record<string, number> = { fatal: 2, error: 3, warn: 4, info: 6, debug: 7, trace: 7 };
const LEVEL_AT_START = /^\{"level":"(\w+)"/;

/**
 * True when stdout is the journal's stream: systemd sets JOURNAL_STREAM to its `device:inode`
 * (systemd.exec(5)), so a redirection to a file or a pipe to another program is told apart.
 */
export function stdoutIsJournal(env: NodeJS.ProcessEnv = process.env, fd = 1): boolean {
  const expected = env.JOURNAL_STREAM;
  if (!expected) return false;
  try {
    const stat = fstatSync(fd);
    return expected === `${stat.dev}:${stat.ino}`;
  } catch {
    return false;
  }
}

/**
 * pino behind the small interface the broker uses: `{"level":"info","time":"…","pid":1,"msg":…}`.
 * Level names rather than numbers, so `journalctl -o cat | jq` reads without a table. Under
 * journald each line starts with its `<N>` priority (SyslogLevelPrefix, on by default), which
 * journald strips: `journalctl -p err` then shows the errors (docs/operations.md#logs).
 */
export function createLogger(level: LogLevel, destination?: LogDestination, options: { syslogPrefix?: boolean } = {}): Logger {
  const pinoOptions = {
    level,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
  const prefixed = options.syslogPrefix ?? (destination === undefined && stdoutIsJournal());
  let out: LogDestination | undefined = destination;
  if (prefixed) {
    const target = destination ?? pino.destination({ dest: 1, sync: true });
    out = { write: (line) => target.write(`<${PRIORITY[LEVEL_AT_START.exec(line)?.[1] ?? 'info'] ?? 6}>${line}`) };
  }
  const logger = out ? pino(pinoOptions, out) : pino(pinoOptions);
  return {
    error: (msg, fields) => logger.error(fields ?? {}, msg),
    warn: (msg, fields) => logger.warn(fields ?? {}, msg),
    info: (msg, fields) => logger.info(fields ?? {}, msg),
    debug: (msg, fields) => logger.debug(fields ?? {}, msg),
    setLevel(next) {
      logger.level = next;
    },
  };
}
