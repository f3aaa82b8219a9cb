import { join } from 'node:path';
import { encodeRecord, LOG_VERSION, segmentName, TEMP_SUFFIX } from './log-format.js';
import type { Capture } from './log-index.js';
import { type LogFs, removeIfPresent, syncDirectory, writeFully } from './log-fs.js';

/** snapshot writes go out in pieces of about this size, so serialising never blocks for long */
const CHUNK_BYTES = 128 * 1024;

/**
 * Writes the live state as segment `number`: into a temporary
 * file first, synced, then renamed and the directory synced, so a segment with a snapshot
 * header is always complete. Returns its size in bytes.
 */
export async function writeSnapshot(fs: LogFs, dir: string, number: number, capture: Capture): Promise<number> {
  await fs.mkdir(dir);
  const path = join(dir, segmentName(number));
  const temp = path + TEMP_SUFFIX;
  const file = await fs.open(temp, 'wx');
  let position = 0;
  try {
    let chunk: Buffer[] = [];
    let chunkBytes = 0;
    const add = async (frame: Buffer) => {
      chunk.push(frame);
      chunkBytes += frame.length;
      if (chunkBytes < CHUNK_BYTES) return;
      position += await writeFully(file, chunk, position);
      chunk = [];
      chunkBytes = 0;
    };
    await add(encodeRecord({ k: 'h', v: LOG_VERSION, snapshot: true }));
    for (let i = capture.recentFrom; i < capture.recentTo; i++) {
      await add(encodeRecord({ k: 'd', id: capture.recentIds[i]!, at: capture.recentAt[i]! }));
    }
    for (const entry of capture.entries) await add(encodeRecord({ k: 'm', m: entry.message, r: entry.records }));
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
  return position;
}
