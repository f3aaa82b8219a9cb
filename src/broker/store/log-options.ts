import type { LogFs } from './log-fs.js';

export interface StoreLogger {
  error(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
}

export interface LogStoreOptions {
  /** compact once the log passes this size and live data is at most 1/compactRatio of it */
  compactBytes?: number;
  compactRatio?: number;
  /** ids kept for the dedupe window across compactions and restarts (SPEC §7) */
  dedupeWindowMs?: number;
  /** a store left empty and idle this long is compacted even below `compactBytes` */
  idleCompactMs?: number;
  /** bodies of replayed messages kept in memory, oldest first (frame bytes); the rest stay on disk */
  replayBodyBytes?: number;
  /** how long state changes alone (deliveries, acks, removals) wait for an append to commit with; 0: at once */
  eventDelayMs?: number;
  /** after a write failure, how often to try a fresh snapshot segment */
  retryMs?: number;
  log?: StoreLogger;
  fs?: LogFs;
  now?: () => number;
}

export interface LogStoreStats {
  /** batches written and synced (one fdatasync each, or written with O_DSYNC) */
  commits: number;
  fsyncs: number;
  records: number;
  compactions: number;
  failures: number;
  /** bytes of every segment on disk */
  diskBytes: number;
}

export type CompactionSettings = Required<Pick<LogStoreOptions, 'compactBytes' | 'compactRatio'>>;

/** with nothing live, compaction is cheap: do it from this size on, so drained disk use is small */
const EMPTY_COMPACT_BYTES = 1024 * 1024;
/** ... and once idle, from this size */
export const IDLE_COMPACT_BYTES = 16 * 1024;
const IDLE_COMPACT_RATIO = 2;

/**
 * Amortised: a snapshot is at most 1/compactRatio of the log it replaces, so compaction costs
 * at most 1/(ratio-1) of the writes. `idle`: the writer has had nothing to do for a while.
 */
export function shouldCompact(settings: CompactionSettings, diskBytes: number, liveMessages: number, snapshotBytes: number, idle: boolean): boolean {
  if (liveMessages > 0) return diskBytes >= settings.compactBytes && snapshotBytes * settings.compactRatio <= diskBytes;
  // empty: what is left is dedupe ids; idle, each compaction at least halves the log
  const threshold = Math.min(settings.compactBytes, idle ? IDLE_COMPACT_BYTES : EMPTY_COMPACT_BYTES);
  return diskBytes >= threshold && snapshotBytes * (idle ? IDLE_COMPACT_RATIO : settings.compactRatio) <= diskBytes;
}
