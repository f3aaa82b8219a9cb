import type { Logger } from '../../runtime/logger.js';
import { JsonTableFile } from './json-table-file.js';

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

/**
 * The reserved ids, durable (SPEC §5): the whole table (bounded by limits.maxReservations) in
 * one JSON file, replaced atomically after each change (json-table-file.ts).
 */
export class ReservationFile extends JsonTableFile<ReservationRecord> {
  constructor(path: string, log: Logger) {
    super(path, log, 'reservations', isRecord);
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
