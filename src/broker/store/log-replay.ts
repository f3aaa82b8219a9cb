import { join } from 'node:path';
import { decodeRecord, FRAME_HEADER_BYTES, LOG_VERSION, type LogRecord, parseSegmentName, READABLE_VERSIONS, segmentName, TEMP_SUFFIX } from './log-format.js';
import { type LogFs, removeIfPresent, syncDirectory } from './log-fs.js';
import type { RecordPlace } from './log-index.js';

export type ApplyRecord = (record: LogRecord, bytes: number, place: RecordPlace) => void;

export interface ReplayLogger {
  warn(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
}

export interface ReplayResult {
  /** segment number -> valid bytes, for the segments kept */
  readonly segments: Map<number, number>;
  /** the next free segment number */
  readonly nextNumber: number;
  readonly records: number;
}

const CHUNK_BYTES = 1024 * 1024;

/**
 * Rebuilds the state from the segments in `dir`: from the last snapshot segment on (older ones
 * are left-overs of an interrupted compaction and are removed). A torn or corrupt record ends
 * the last segment, which is cut there (a crash mid-write); in an older segment it is an error.
 */
export async function replaySegments(fs: LogFs, dir: string, apply: ApplyRecord, log: ReplayLogger): Promise<ReplayResult> {
  const names = await fs.readdir(dir);
  for (const name of names) if (name.endsWith(TEMP_SUFFIX)) await removeIfPresent(fs, join(dir, name));
  const numbers = names.map(parseSegmentName).filter((n): n is number => n !== null).sort((a, b) => a - b);
  const nextNumber = (numbers.at(-1) ?? 0) + 1;

  let start = 0;
  for (let i = numbers.length - 1; i > 0; i--) {
    if (await isSnapshot(fs, join(dir, segmentName(numbers[i]!)))) {
      start = i;
      break;
    }
  }
  const segments = new Map<number, number>();
  let records = 0;
  for (let i = start; i < numbers.length; i++) {
    const path = join(dir, segmentName(numbers[i]!));
    const result = await replayFile(fs, path, numbers[i]!, i === numbers.length - 1, apply, log);
    records += result.records;
    if (result.bytes === 0) await removeIfPresent(fs, path);
    else segments.set(numbers[i]!, result.bytes);
  }
  // only once the snapshot's state is rebuilt: what it replaces can go
  for (const number of numbers.slice(0, start)) await removeIfPresent(fs, join(dir, segmentName(number)));
  if (start > 0 || segments.size < numbers.length) await syncDirectory(fs, dir);
  return { segments, nextNumber, records };
}

async function isSnapshot(fs: LogFs, path: string): Promise<boolean> {
  const file = await fs.open(path, 'r');
  try {
    const buffer = Buffer.alloc(4096);
    const { bytesRead } = await file.read(buffer, 0, buffer.length, 0);
    const decoded = decodeRecord(buffer, 0, bytesRead);
    const first = decoded.ok ? decoded.records[0] : undefined;
    return first?.k === 'h' && first.snapshot;
  } finally {
    await file.close();
  }
}

/** streams one segment's frames to `apply`; returns how many bytes of it are valid */
async function replayFile(fs: LogFs, path: string, number: number, isLast: boolean, apply: ApplyRecord, log: ReplayLogger): Promise<{ bytes: number; records: number }> {
  const file = await fs.open(path, isLast ? 'r+' : 'r');
  try {
    const { size } = await file.stat();
    let buffer = Buffer.allocUnsafe(CHUNK_BYTES);
    let base = 0; // file offset of buffer[0]
    let offset = 0;
    let end = 0;
    let eof = false;
    let records = 0;
    // one place object per segment, moved along: the index copies what it keeps
    const place = { segment: number, offset: 0, replayed: true, inSnapshot: false };
    for (;;) {
      const decoded = decodeRecord(buffer, offset, end);
      if (decoded.ok) {
        if (records === 0) place.inSnapshot = checkHeader(decoded.records[0]!, path);
        place.offset = base + offset;
        for (const record of decoded.records) apply(record, decoded.bytes, place);
        records += decoded.records.length;
        offset += decoded.bytes;
        continue;
      }
      if (decoded.reason === 'short' && !eof) {
        const wanted = end - offset >= FRAME_HEADER_BYTES ? FRAME_HEADER_BYTES + buffer.readUInt32LE(offset) : 0;
        // a length past the end of the file is a torn (or garbage) header: no need to read it
        if (base + offset + wanted > size) {
          eof = true;
          continue;
        }
        const kept = buffer.subarray(offset, end);
        if (wanted > buffer.length) buffer = Buffer.concat([kept], Math.max(wanted, CHUNK_BYTES));
        else kept.copy(buffer, 0);
        base += offset;
        end = kept.length;
        offset = 0;
        const { bytesRead } = await file.read(buffer, end, buffer.length - end, base + end);
        eof = bytesRead === 0;
        end += bytesRead;
        continue;
      }
      const at = base + offset;
      if (decoded.reason === 'short' && end === offset) return { bytes: at, records };
      if (!isLast) {
        throw new Error(`store segment ${path} is corrupt at byte ${at} (${decoded.reason}) and is not the last one: refusing to start without it; move it away to start from what remains`);
      }
      log.warn('store: torn record at the end of the log, cut off (a crash mid-write)', { segment: path, at, reason: decoded.reason, lostBytes: size - at });
      await file.truncate(at);
      await file.datasync();
      return { bytes: at, records };
    }
  } finally {
    await file.close();
  }
}

/** returns whether the segment is a snapshot */
function checkHeader(record: LogRecord, path: string): boolean {
  if (record.k !== 'h') throw new Error(`store segment ${path} does not start with a header: not a Whisker log`);
  if (!READABLE_VERSIONS.includes(record.v)) {
    throw new Error(`store segment ${path} has format version ${record.v}; this broker reads versions ${READABLE_VERSIONS.join(' and ')} (writes ${LOG_VERSION}): a newer broker wrote this log, run that one (docs/operations.md#store-format)`);
  }
  return record.snapshot;
}
