import { readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import type { Logger } from '../../runtime/logger.js';

/** one recipient group a restart holds again (docs/configuration.md, groupHold) */
export interface KeptGroup {
  /** `endpoint/version` */
  readonly queue: string;
  /** the group's key (queue/group.ts: `c|pattern`, `l|name|pattern`) */
  readonly group: string;
}

const VERSION = 1;
/** groups kept at most (a few dozen bytes each); past it the others are not held after a restart (docs/security.md#limits) */
export const MAX_KEPT_GROUPS = 10_000;
/** changes within this much are written once */
const COALESCE_MS = 50;

/**
 * The recipient groups with members or held (groupHold), durable so that a restarted broker
 * holds them again as if their connections were lost at the restart (issue 27: the nemesis's
 * 30-minute run, seed 2027). One JSON file in the data directory, written a short while after a
 * change to a temporary file and renamed, without fsync, as in-step.json: a `kill -9` keeps the
 * page cache; a machine crash can lose the last change (a group then is not held: as before).
 */
export class GroupFile {
  readonly #path: string;
  readonly #log: Logger;
  #snapshot: (() => readonly KeptGroup[]) | null = null;
  #timer: NodeJS.Timeout | null = null;
  #writing: Promise<void> | null = null;
  #again = false;
  #last = '';
  #frozen = false;
  #freezing: Promise<void> | null = null;
  #warnedFull = false;

  constructor(path: string, log: Logger) {
    this.#path = path;
    this.#log = log;
  }

  /** what the file holds; nothing when it is missing or unreadable (logged) */
  load(): KeptGroup[] {
    let text: string;
    try {
      text = readFileSync(this.#path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.#log.error('groups file unreadable: no group held after this start', { path: this.#path, error: (error as Error).message });
      return [];
    }
    try {
      const parsed = JSON.parse(text) as { version?: unknown; groups?: unknown };
      if (parsed.version !== VERSION || !Array.isArray(parsed.groups)) throw new Error(`not version ${VERSION}`);
      this.#last = text;
      return parsed.groups.filter(isKept).slice(0, MAX_KEPT_GROUPS);
    } catch (error) {
      this.#log.error('groups file unreadable: no group held after this start', { path: this.#path, error: (error as Error).message });
      return [];
    }
  }

  /** the groups changed: written soon with what `snapshot` gives then */
  changed(snapshot: () => readonly KeptGroup[]): void {
    this.#snapshot = snapshot;
    if (this.#frozen) return;
    if (this.#writing) {
      this.#again = true;
      return;
    }
    this.#timer ??= setTimeout(() => {
      this.#timer = null;
      this.#writing = this.#writeLoop();
    }, COALESCE_MS);
    this.#timer.unref();
  }

  /**
   * Stopping: the connections the stop closes leave the file as it is (their clients come back to
   * the restarted broker as after a lost connection); a change under way still lands.
   */
  freeze(): Promise<void> {
    this.#freezing ??= this.#freeze();
    return this.#freezing;
  }

  async #freeze(): Promise<void> {
    this.#frozen = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    // the groups as they are now, before the stop closes their connections
    const groups = this.#snapshot?.();
    while (this.#writing) await this.#writing;
    if (!groups) return;
    this.#writing = this.#writeLoop(groups);
    await this.#writing;
  }

  async #writeLoop(last?: readonly KeptGroup[]): Promise<void> {
    try {
      if (last) return await this.#write(last);
      do {
        this.#again = false;
        await this.#write(this.#snapshot?.() ?? []);
      } while (this.#again && !this.#frozen);
    } catch (error) {
      this.#log.error('groups could not be written: a restart may not hold the latest', { path: this.#path, error: (error as Error).message });
    } finally {
      this.#writing = null;
    }
  }

  async #write(groups: readonly KeptGroup[]): Promise<void> {
    if (groups.length > MAX_KEPT_GROUPS && !this.#warnedFull) {
      this.#warnedFull = true;
      this.#log.warn('more recipient groups than a restart holds again: the others are not kept', { groups: groups.length, limit: MAX_KEPT_GROUPS });
    }
    const text = JSON.stringify({ version: VERSION, groups: groups.slice(0, MAX_KEPT_GROUPS) });
    if (text === this.#last) return;
    const temporary = `${this.#path}.tmp`;
    await writeFile(temporary, text, { mode: 0o600 });
    await rename(temporary, this.#path);
    this.#last = text;
  }
}

function isKept(value: unknown): value is KeptGroup {
  if (typeof value !== 'object' || value === null) return false;
  const g = value as Record<string, unknown>;
  return typeof g.queue === 'string' && typeof g.group === 'string';
}
