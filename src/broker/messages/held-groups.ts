import type { Logger } from '../../runtime/logger.js';
import { JsonTableFile } from '../store/json-table-file.js';

/** one recipient group of a queue, as `<dataDirectory>/groups.json` lists it */
export interface HeldGroup {
  /** `endpoint/version` */
  readonly queue: string;
  /** the group's key (queue/group.ts `groupKey`) */
  readonly group: string;
}

/**
 * The recipient groups of every queue, durable: a restart (a kill -9 too) holds them again for
 * `groupHold` (docs/configuration.md), as a lost connection's group is held. Without it a
 * group with nothing waiting went with the process, and what its clients' producers re-sent
 * before it subscribed again went to the other groups only: the nemesis (seed 27) lost every
 * send of those seconds for the listener, or for the consumers, when the killed master came
 * back and was elected again (issue 30's revert, test/broker/store/restart-groups.test.ts).
 */
export function heldGroupsFile(path: string, log: Logger): JsonTableFile<HeldGroup> {
  return new JsonTableFile(path, log, 'groups', isHeldGroup);
}

function isHeldGroup(value: unknown): value is HeldGroup {
  if (typeof value !== 'object' || value === null) return false;
  const g = value as Record<string, unknown>;
  return typeof g.queue === 'string' && typeof g.group === 'string';
}

/**
 * The groups written down for a restart (Router's, as its queues' groups change); not those a stop
 * lets go as it closes its connections
 */
export class KeptGroups {
  readonly #file: JsonTableFile<HeldGroup> | null;
  readonly #list: () => HeldGroup[];
  readonly #isStopping: () => boolean;
  #atStop: Promise<void> | null = null;

  constructor(file: JsonTableFile<HeldGroup> | null, list: () => HeldGroup[], isStopping: () => boolean) {
    this.#file = file;
    this.#list = list;
    this.#isStopping = isStopping;
  }

  changed(): void {
    if (this.#isStopping()) return;
    this.#file?.changed(() => this.#list());
  }

  /**
   * A stop begins: the groups as they are now are what the file ends with (a write under way, or
   * one that the last change queued, would otherwise read them after the stop closed their
   * connections); the stop waits for it (`kept`)
   */
  keepAtStop(): void {
    const file = this.#file;
    if (!file || this.#atStop) return;
    const groups = this.#list();
    file.changed(() => groups);
    this.#atStop = file.flushed();
  }

  /** the groups as they were when the stop began are on disk */
  kept(): Promise<void> {
    return this.#atStop ?? this.#file?.flushed() ?? Promise.resolve();
  }
}
