import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { FRAME_HEADER_BYTES, FrameWriter } from './log-binary.js';
import { decodeRecord, encodeHeader, segmentName, TEMP_SUFFIX } from './log-format.js';
import type { Capture, LiveEntry } from './log-index.js';
import { type LogFs, removeIfPresent, syncDirectory, writeFully } from './log-fs.js';
import type { StoredMessage } from './store.js';

/** snapshot writes go out in pieces of about this size, so serialising never blocks for long */
const CHUNK_BYTES = 128 * 1024;
/**
 * slots walked between two turns: frames read from a window already in memory resolve without
 * leaving the turn, and a drained index is mostly free slots (26 ms in one turn at a million)
 */
const SLOTS_PER_TURN = 8192;
const JSON_OPEN_BRACE = 0x7b;

export interface SnapshotResult {
  readonly bytes: number;
  /** where each captured slot's message record now is, by slot */
  readonly offsets: Float64Array;
}

/**
 * Writes the live state as segment `number`: into a temporary
 * file first, synced, then renamed and the directory synced, so a segment with a snapshot
 * header is always complete. The recent ids come first (runs of state changes), then each live
 * message's frame (`frameOf` reads it back from its segment: the index keeps no bodies) followed, in runs, by its delivery records.
 */
export async function writeSnapshot(fs: LogFs, dir: string, number: number, capture: Capture, frameOf: (entry: LiveEntry) => Promise<Buffer>): Promise<SnapshotResult> {
  await fs.mkdir(dir);
  const path = join(dir, segmentName(number));
  const temp = path + TEMP_SUFFIX;
  const file = await fs.open(temp, 'wx');
  const writer = new FrameWriter();
  let position = 0;
  const offsets = new Float64Array(capture.count);
  try {
    const flushIfFull = async () => {
      if (writer.size < CHUNK_BYTES) return;
      position += await writeFully(file, [writer.bytes()], position);
      writer.reset();
    };
    writer.raw(encodeHeader(true));
    for (let i = capture.recentFrom; i < capture.recentTo; i++) {
      writer.event({ k: 'd', id: capture.recentIds.at(i), at: capture.recentIds.numberAt(i) });
      if (i % 1024 === 0) await flushIfFull();
    }
    for (let slot = 0; slot < capture.count; slot++) {
      if (slot % SLOTS_PER_TURN === SLOTS_PER_TURN - 1) await nextTurn();
      const entry = capture.entry(slot);
      if (!entry) continue;
      offsets[slot] = position + writer.size;
      copyFrame(writer, await frameOf(entry));
      const id = entry.messageId;
      if (entry.records.length > 0) writer.event({ k: 'a', id, g: entry.records.map((r) => r[0]) });
      for (const [g, n, nb] of entry.records) if (n !== 0 || nb !== 0) writer.event({ k: 'r', id, g, n, nb });
      await flushIfFull();
    }
    position += await writeFully(file, [writer.bytes()], position);
    await file.datasync();
    await file.close();
  } catch (error) {
    await file.close().catch(() => undefined);
    await removeIfPresent(fs, temp).catch(() => undefined);
    throw error;
  }
  await fs.rename(temp, path);
  await syncDirectory(fs, dir);
  return { bytes: position, offsets };
}

/** a version 2 frame is copied as it is; a version 1 (JSON) one is written again as version 2 */
function copyFrame(writer: FrameWriter, frame: Buffer): void {
  if (frame[FRAME_HEADER_BYTES] !== JSON_OPEN_BRACE) return writer.raw(frame);
  const decoded = decodeRecord(frame, 0, frame.length);
  const record = decoded.ok ? decoded.records[0] : undefined;
  if (record?.k !== 'm') throw new Error('a message record read back for the snapshot is not one');
  const m: StoredMessage = record.m;
  writer.message(m, JSON.stringify(m.data));
}
