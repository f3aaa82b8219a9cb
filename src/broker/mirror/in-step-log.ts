import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { Logger } from '../../runtime/logger.js';

/** one stretch of time this broker, a slave, was in step with `master` (its clock, ms) */
export interface InStepInterval {
  readonly since: number;
  readonly until: number;
  readonly master: string;
  readonly epoch?: number;
}

/** closed intervals kept in the file besides the open one */
const KEEP_CLOSED = 8;
/** the open interval's end is written this often while in step */
const WRITE_EVERY_MS = 1_000;

interface OpenInterval {
  since: number;
  asOf: number;
  master: string;
  epoch?: number;
}

/**
 * When this broker was in step with a master, kept across a restart or a kill -9 (issue 27,
 * nemesis seed 27): a message accepted in step, that stayed in step long enough for the master
 * to get it, reached that master; a later sync that does not name it means the set settled it.
 *
 * A small JSON file in the dataDirectory, rewritten about once a second while in step (the open
 * interval's `asOf`) and at each start and end of an interval. No fsync: a kill -9 keeps the
 * page cache, and a machine crash loses at most the newest writes, which makes the intervals
 * shorter or missing, never longer (a message is then kept, as before). Written to a temporary
 * file and renamed, so a read finds the old file or the new one.
 */
export class InStepLog {
  readonly #path: string;
  readonly #now: () => number;
  readonly #log: Logger | undefined;
  #closed: InStepInterval[] = [];
  #open: OpenInterval | null = null;
  #timer: NodeJS.Timeout | null = null;
  #failed = false;

  constructor(path: string, now: () => number, log?: Logger) {
    this.#path = path;
    this.#now = now;
    this.#log = log;
    this.#read();
  }

  /** the intervals known, the open one up to now */
  intervals(): InStepInterval[] {
    const open = this.#open;
    return open ? [...this.#closed, { since: open.since, until: this.#now(), master: open.master, ...(open.epoch !== undefined ? { epoch: open.epoch } : {}) }] : [...this.#closed];
  }

  /**
   * Was this broker in step, with `master` or one elected after it (`epoch` greater), for all
   * of [from, to]?
   */
  covers(from: number, to: number, master: string, epoch: number | undefined): boolean {
    for (const interval of this.intervals()) {
      if (interval.since > from || interval.until < to) continue;
      if (interval.master === master) return true;
      if (epoch !== undefined && interval.epoch !== undefined && epoch > interval.epoch) return true;
    }
    return false;
  }

  /** in step with `master` from now on (a second call while open changes nothing) */
  begin(master: string, epoch: number | undefined): void {
    if (this.#open) return;
    const now = this.#now();
    this.#open = { since: now, asOf: now, master, ...(epoch !== undefined ? { epoch } : {}) };
    this.#write();
    this.#timer = setInterval(() => {
      if (!this.#open) return;
      this.#open.asOf = this.#now();
      this.#write();
    }, WRITE_EVERY_MS);
    this.#timer.unref();
  }

  /** no longer in step: the open interval is closed at now */
  end(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    if (!this.#open) return;
    this.#close(this.#open, this.#now());
    this.#open = null;
    this.#write();
  }

  /** at stop: the open interval closed now (a kill -9 leaves it ending at its last `asOf`) */
  close(): void {
    this.end();
  }

  #close(open: OpenInterval, until: number): void {
    this.#closed.push({ since: open.since, until, master: open.master, ...(open.epoch !== undefined ? { epoch: open.epoch } : {}) });
    if (this.#closed.length > KEEP_CLOSED) this.#closed.splice(0, this.#closed.length - KEEP_CLOSED);
  }

  #read(): void {
    let text: string;
    try {
      text = readFileSync(this.#path, 'utf8');
    } catch {
      return; // none yet
    }
    try {
      const file = JSON.parse(text) as { open?: OpenInterval | null; closed?: InStepInterval[] };
      this.#closed = (file.closed ?? []).filter(valid).slice(-KEEP_CLOSED);
      // the run before ended (a stop or a kill -9) while in step: in step until its last write
      if (file.open && valid({ ...file.open, until: file.open.asOf })) this.#close(file.open, file.open.asOf);
    } catch (error) {
      this.#log?.warn('could not read when this broker was in step with its master: messages the next sync does not name are kept', { path: this.#path, error: (error as Error).message });
    }
  }

  #write(): void {
    const tmp = `${this.#path}.tmp`;
    try {
      writeFileSync(tmp, JSON.stringify({ open: this.#open, closed: this.#closed }));
      renameSync(tmp, this.#path);
      this.#failed = false;
    } catch (error) {
      if (!this.#failed) this.#log?.warn('could not write when this broker was in step with its master', { path: this.#path, error: (error as Error).message });
      this.#failed = true;
    }
  }
}

function valid(interval: Partial<InStepInterval>): interval is InStepInterval {
  return typeof interval.since === 'number' && typeof interval.until === 'number' && interval.until >= interval.since && typeof interval.master === 'string' && (interval.epoch === undefined || typeof interval.epoch === 'number');
}
