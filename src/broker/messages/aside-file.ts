import { closeSync, fdatasyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from '../../runtime/logger.js';

/** a queue moving to this set whose sends wait aside (moving.ts), as `<dataDirectory>/aside.json` lists it */
export interface AsideQueue {
  /** `endpoint/version` */
  readonly queue: string;
  /** the seq before the range set apart for the hand-over */
  readonly before: number;
}

const VERSION = 1;

/**
 * The queues whose sends wait aside for a move's hand-over (SPEC §13), durable: a broker of the
 * new set restarted during the move (a kill -9 too) keeps what it loads of them aside, behind the
 * hand-over, with the seqs it set apart for it. Without it the restart queued those sends before
 * the older messages handed over, and its history wrote them first (atk31d: 1,461-2,214 order
 * breaks per id for a consumer, 4,256-4,365 records out of order in a replay).
 *
 * Written at once (fsynced, renamed, directory fsynced) when a queue starts or stops waiting
 * aside, before any send is put aside: once per move, a few milliseconds.
 */
export class AsideFile {
  readonly #path: string;
  readonly #log: Logger;

  constructor(path: string, log: Logger) {
    this.#path = path;
    this.#log = log;
  }

  /** what the file holds; nothing when it is missing or unreadable (logged) */
  load(): AsideQueue[] {
    let text: string;
    try {
      text = readFileSync(this.#path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.#log.error('aside file unreadable: no queue waits aside', { path: this.#path, error: (error as Error).message });
      return [];
    }
    try {
      const parsed = JSON.parse(text) as { version?: unknown; aside?: unknown };
      if (parsed.version !== VERSION || !Array.isArray(parsed.aside)) throw new Error(`not version ${VERSION}`);
      const rows = parsed.aside.filter(isAsideQueue);
      if (rows.length < parsed.aside.length) this.#log.error('aside file: rows not understood are left out (their queues are restored as any other)', { path: this.#path, rows: parsed.aside.length, kept: rows.length });
      return rows;
    } catch (error) {
      this.#log.error('aside file unreadable: no queue waits aside', { path: this.#path, error: (error as Error).message });
      return [];
    }
  }

  /** the whole table, on disk when it returns (a failed write is logged: a restart may queue those sends early) */
  save(rows: readonly AsideQueue[]): void {
    const temporary = `${this.#path}.tmp`;
    try {
      const fd = openSync(temporary, 'w', 0o600);
      try {
        writeSync(fd, JSON.stringify({ version: VERSION, aside: rows }));
        fdatasyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(temporary, this.#path);
      const dir = openSync(dirname(this.#path), 'r');
      try {
        fdatasyncSync(dir);
      } finally {
        closeSync(dir);
      }
    } catch (error) {
      this.#log.error('aside file could not be written: a restart during the move may deliver early', { path: this.#path, error: (error as Error).message });
    }
  }
}

function isAsideQueue(value: unknown): value is AsideQueue {
  if (typeof value !== 'object' || value === null) return false;
  const row = value as Record<string, unknown>;
  // a range past `before` must stay exact in a double (seqs are stored as one)
  return typeof row.queue === 'string' && typeof row.before === 'number' && Number.isSafeInteger(row.before) && row.before >= 0 && row.before < 2 ** 50;
}
