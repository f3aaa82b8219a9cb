import { closeSync, fdatasyncSync, openSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from '../../runtime/logger.js';
import { JsonTableFile } from '../store/json-table-file.js';

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
 * Read as JsonTableFile reads the other small tables (a row it cannot follow is left out);
 * written at once, not after the turn as those are (fsynced, renamed, directory fsynced), when a
 * queue starts or stops waiting aside, before any send is put aside: once per move, a few
 * milliseconds.
 */
export class AsideFile {
  readonly #path: string;
  readonly #log: Logger;
  /** the reading side: the same `{ version, aside: [...] }` shape as the other small tables */
  readonly #table: JsonTableFile<AsideQueue>;

  constructor(path: string, log: Logger) {
    this.#path = path;
    this.#log = log;
    this.#table = new JsonTableFile(path, log, 'aside', isAsideQueue);
  }

  /** what the file holds; nothing when it is missing or unreadable (logged) */
  load(): AsideQueue[] {
    return this.#table.load();
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
