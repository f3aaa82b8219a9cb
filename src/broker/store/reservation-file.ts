import { readFileSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from '../../runtime/logger.js';

/** one reserved id as stored, mirrored and listed (docs/protocol.md#peers, `whisker reservations list`) */
export interface ReservationRecord {
  /** `endpoint/version/id`, id canonical */
  readonly channel: string;
  /** the client name holding it */
  readonly owner: string;
  /** ms since the epoch, when the name took it */
  readonly since: number;
  /** ms since the epoch, when it is released unless the name subscribes again; null while subscribed */
  readonly releaseAt: number | null;
}

const VERSION = 1;

/**
 * The reserved ids, durable (SPEC §5): the whole table (bounded by limits.maxReservations) in
 * one JSON file, replaced atomically (written, fsynced, renamed, directory fsynced) after each
 * change; changes made while a write is under way go in the next one.
 */
export class ReservationFile {
  readonly #path: string;
  readonly #log: Logger;
  #snapshot: (() => readonly ReservationRecord[]) | null = null;
  #writing: Promise<void> | null = null;
  #again = false;
  /** changes made, and changes on disk (or given up on after a failed write) */
  #changes = 0;
  #written = 0;
  #waiters: Array<{ upTo: number; resolve: () => void }> = [];

  constructor(path: string, log: Logger) {
    this.#path = path;
    this.#log = log;
  }

  /** what the file holds; nothing when it is missing or unreadable (logged) */
  load(): ReservationRecord[] {
    let text: string;
    try {
      text = readFileSync(this.#path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.#log.error('reservations file unreadable: starting with none', { path: this.#path, error: (error as Error).message });
      return [];
    }
    try {
      const parsed = JSON.parse(text) as { version?: unknown; reservations?: unknown };
      if (parsed.version !== VERSION || !Array.isArray(parsed.reservations)) throw new Error(`not version ${VERSION}`);
      return parsed.reservations.filter(isRecord);
    } catch (error) {
      this.#log.error('reservations file unreadable: starting with none', { path: this.#path, error: (error as Error).message });
      return [];
    }
  }

  /** the table changed: written soon with what `snapshot` gives then */
  changed(snapshot: () => readonly ReservationRecord[]): void {
    this.#snapshot = snapshot;
    this.#changes++;
    if (this.#writing) {
      this.#again = true;
      return;
    }
    this.#writing = this.#writeLoop();
  }

  /** resolves once every change made so far is on disk (not waiting for later ones); null when it is */
  get pending(): Promise<void> | null {
    if (this.#written >= this.#changes) return null;
    const upTo = this.#changes;
    return new Promise((resolve) => this.#waiters.push({ upTo, resolve }));
  }

  /** resolves once every change so far is on disk */
  async flushed(): Promise<void> {
    while (this.#writing) await this.#writing;
  }

  async #writeLoop(): Promise<void> {
    try {
      do {
        this.#again = false;
        const upTo = this.#changes;
        await this.#write(this.#snapshot?.() ?? []);
        this.#settle(upTo);
      } while (this.#again);
    } catch (error) {
      this.#log.error('reservations could not be written: a restart may not keep the latest', { path: this.#path, error: (error as Error).message });
    } finally {
      this.#writing = null;
      this.#settle(this.#changes); // given up on: nobody waits for a write that will not come
    }
  }

  #settle(upTo: number): void {
    this.#written = Math.max(this.#written, upTo);
    const ready = this.#waiters.filter((w) => w.upTo <= this.#written);
    this.#waiters = this.#waiters.filter((w) => w.upTo > this.#written);
    for (const w of ready) w.resolve();
  }

  async #write(records: readonly ReservationRecord[]): Promise<void> {
    const temporary = `${this.#path}.tmp`;
    const file = await open(temporary, 'w', 0o600);
    try {
      await file.writeFile(JSON.stringify({ version: VERSION, reservations: records }));
      await file.datasync();
    } finally {
      await file.close();
    }
    await rename(temporary, this.#path);
    const dir = await open(dirname(this.#path), 'r');
    try {
      await dir.datasync();
    } finally {
      await dir.close();
    }
  }
}

export function isRecord(value: unknown): value is ReservationRecord {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Record<string, unknown>;
  return (
    typeof r.channel === 'string' &&
    typeof r.owner === 'string' &&
    Number.isSafeInteger(r.since) &&
    (r.releaseAt === null || Number.isSafeInteger(r.releaseAt))
  );
}
