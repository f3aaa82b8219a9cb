import { WhiskerError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/logger.js';

/** the reason codes of E_FORBIDDEN's `details.reason` (docs/protocol.md#errors) */
export type RefusalReason = 'no-rule' | 'reserved' | 'star-under-reserve';
export type Right = 'read' | 'write';

/** what a refused client is told: never the name of the client holding a reserved id */
export interface RefusalDetails {
  readonly channel: string;
  readonly right: Right;
  readonly reason: RefusalReason;
}

/** one info line per client name and channel a minute (SPEC §5) */
const LOG_EVERY_MS = 60_000;
/** name+channel pairs remembered for that: a client choosing channels cannot grow it further */
const MAX_REMEMBERED = 10_000;

/**
 * E_FORBIDDEN with its reason (SPEC §5), and the broker's info line about it, rate limited per
 * client name and channel in bounded memory: past MAX_REMEMBERED pairs seen within the minute,
 * further refusals are not logged until the oldest pairs age out.
 */
export class Refusals {
  readonly #log: Logger;
  readonly #now: () => number;
  /** `name\0channel` -> when it was last logged, oldest first (Map keeps insertion order) */
  readonly #logged = new Map<string, number>();
  /** refusals not logged because of the rate limit, for the next line about the same pair */
  #suppressed = 0;

  constructor(log: Logger, now: () => number) {
    this.#log = log;
    this.#now = now;
  }

  /** the error for the client; logged at info with `owner` (the holder of a reserved id) */
  forbidden(client: string, channel: string, right: Right, reason: RefusalReason, owner?: string): WhiskerError {
    this.#note(client, channel, right, reason, owner);
    const details: RefusalDetails = { channel, right, reason };
    return new WhiskerError('E_FORBIDDEN', 'Not allowed', details);
  }

  #note(client: string, channel: string, right: Right, reason: RefusalReason, owner: string | undefined): void {
    const now = this.#now();
    for (const [key, at] of this.#logged) {
      if (now - at < LOG_EVERY_MS) break;
      this.#logged.delete(key);
    }
    const key = `${client}\0${channel}`;
    const last = this.#logged.get(key);
    if ((last !== undefined && now - last < LOG_EVERY_MS) || (last === undefined && this.#logged.size >= MAX_REMEMBERED)) {
      this.#suppressed++;
      return;
    }
    this.#logged.delete(key);
    this.#logged.set(key, now);
    const suppressed = this.#suppressed;
    this.#suppressed = 0;
    this.#log.info('refused', { client, channel, right, reason, ...(owner !== undefined ? { owner } : {}), ...(suppressed > 0 ? { notLoggedSince: suppressed } : {}) });
  }

  /** pairs remembered for the rate limit (bounded by MAX_REMEMBERED) */
  get remembered(): number {
    return this.#logged.size;
  }
}
