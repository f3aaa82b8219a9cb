import { readFileSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from '../../runtime/logger.js';

const VERSION = 1;

/**
 * A small table kept whole in one JSON file (`{ version, <name>: [...] }`), replaced atomically
 * (written, fsynced, renamed, directory fsynced) after each change; changes made while a write
 * is under way go in the next one. The reserved ids (reservation-file.ts) and the recipient
 * groups a restart holds again (messages/held-groups.ts) are kept this way.
 */
export class JsonTableFile<T> {
  readonly #path: string;
  readonly #log: Logger;
  /** the key of the rows in the file, and the word for them in log lines */
  readonly #name: string;
  readonly #isRow: (value: unknown) => value is T;
  #snapshot: (() => readonly T[]) | null = null;
  #writing: Promise<void> | null = null;
  #again = false;
  /** changes made, and changes on disk (or given up on after a failed write) */
  #changes = 0;
  #written = 0;
  #waiters: Array<{ upTo: number; resolve: () => void }> = [];

  constructor(path: string, log: Logger, name: string, isRow: (value: unknown) => value is T) {
    this.#path = path;
    this.#log = log;
    this.#name = name;
    this.#isRow = isRow;
  }

  /** what the file holds; nothing when it is missing or unreadable (logged) */
  load(): T[] {
    let text: string;
    try {
      text = readFileSync(this.#path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.#log.error(`${this.#name} file unreadable: starting with none`, { path: this.#path, error: (error as Error).message });
      return [];
    }
    try {
      const parsed = JSON.parse(text) as Record<string, unknown>;
      const rows = parsed[this.#name];
      if (parsed.version !== VERSION || !Array.isArray(rows)) throw new Error(`not version ${VERSION}`);
      return rows.filter(this.#isRow);
    } catch (error) {
      this.#log.error(`${this.#name} file unreadable: starting with none`, { path: this.#path, error: (error as Error).message });
      return [];
    }
  }

  /** the table changed: written soon with what `snapshot` gives then */
  changed(snapshot: () => readonly T[]): void {
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
      this.#log.error(`${this.#name} could not be written: a restart may not keep the latest`, { path: this.#path, error: (error as Error).message });
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

  async #write(rows: readonly T[]): Promise<void> {
    const temporary = `${this.#path}.tmp`;
    const file = await open(temporary, 'w', 0o600);
    try {
      await file.writeFile(JSON.stringify({ version: VERSION, [this.#name]: rows }));
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
