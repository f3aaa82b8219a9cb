import { join } from 'node:path';
import { encodeRecord, LOG_VERSION, segmentName, TEMP_SUFFIX } from './log-format.js';
import type { Capture, LiveEntry } from './log-index.js';
import { type LogFs, removeIfPresent, syncDirectory, writeFully } from './log-fs.js';

/** snapshot writes go out in pieces of about this size, so serialising never blocks for long */
const CHUNK_BYTES = 128 * 1024;

export interface SnapshotResult {
  readonly bytes: number;
  /** where each captured entry's message record now is, parallel to `capture.entries` */
  readonly offsets: number[];
}

/**
 * Writes the live state as segment `number`: into a temporary
 * file first, synced, then renamed and the directory synced, so a segment with a snapshot
 * header is always complete. Each live message is its own record (`frameOf`: read back from
 * its segment when its body is not in memory) followed by its delivery records.
 */
export async function writeSnapshot(fs: LogFs, dir: string, number: number, capture: Capture, frameOf: (entry: LiveEntry) => Promise<Buffer>): Promise<SnapshotResult> {
  await fs.mkdir(dir);
  const path = join(dir, segmentName(number));
  const temp = path + TEMP_SUFFIX;
  const file = await fs.open(temp, 'wx');
  let position = 0;
  let written = 0; // bytes added so far, flushed or not
  const offsets: number[] = [];
  try {
    let chunk: Buffer[] = [];
    let chunkBytes = 0;
    const add = async (frame: Buffer) => {
      chunk.push(frame);
      chunkBytes += frame.length;
      written += frame.length;
      if (chunkBytes < CHUNK_BYTES) return;
      position += await writeFully(file, chunk, position);
      chunk = [];
      chunkBytes = 0;
    };
    await add(encodeRecord({ k: 'h', v: LOG_VERSION, snapshot: true }));
    for (let i = capture.recentFrom; i < capture.recentTo; i++) {
      await add(encodeRecord({ k: 'd', id: capture.recentIds[i]!, at: capture.recentAt[i]! }));
    }
    for (const entry of capture.entries) {
      offsets.push(written);
      await add(await frameOf(entry));
      const id = entry.message.messageId;
      if (entry.records.length > 0) await add(encodeRecord({ k: 'a', id, g: entry.records.map((r) => r[0]) }));
      for (const [g, n, nb] of entry.records) if (n !== 0 || nb !== 0) await add(encodeRecord({ k: 'r', id, g, n, nb }));
    }
    position += await writeFully(file, chunk, position);
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
