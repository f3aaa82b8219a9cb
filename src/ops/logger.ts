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

/**
 * pino behind the small interface the broker uses: `{"level":"info","time":"…","pid":1,"msg":…}`.
 * Level names rather than numbers, so `journalctl -o cat | jq` reads without a table.
 */
export function createLogger(level: LogLevel, destination?: LogDestination): Logger {
  const options = {
    level,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
  const logger = destination ? pino(options, destination) : pino(options);
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
