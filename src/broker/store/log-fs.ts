import { constants, fstatSync } from 'node:fs';
import { mkdir, open, readdir, rename, unlink } from 'node:fs/promises';

/**
 * The few file operations the durable log needs, behind an interface so a test can inject a
 * failing disk (as root, chmod does not stop writes). Defaults to node:fs/promises, whose
 * calls run on libuv's thread pool: the event loop never waits for the disk.
 */
export interface LogFile {
  /**
   * Opened for synchronised writes (O_DSYNC): a write resolves once its data is durable, as
   * a write and then datasync() would, in one call to the thread pool instead of two.
   */
  readonly writesAreDurable?: boolean;
  writev(buffers: readonly Buffer[], position: number): Promise<{ bytesWritten: number }>;
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  datasync(): Promise<void>;
  truncate(length: number): Promise<void>;
  stat(): Promise<{ size: number; nlink: number }>;
  close(): Promise<void>;
}

export interface LogFs {
  /** `wx-durable`: a new file whose writes are durable when they resolve (`writesAreDurable`) */
  open(path: string, flags: 'r' | 'r+' | 'wx' | 'wx-durable'): Promise<LogFile>;
  readdir(path: string): Promise<string[]>;
  mkdir(path: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
}

export const nodeFs: LogFs = {
  open: async (path, flags) => {
    const durable = flags === 'wx-durable';
    const handle = await open(path, durable ? constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_DSYNC : flags, 0o600);
    return {
      writesAreDurable: durable,
      writev: (buffers, position) => handle.writev(buffers, position),
      read: (buffer, offset, length, position) => handle.read(buffer, offset, length, position),
      datasync: () => handle.datasync(),
      truncate: (length) => handle.truncate(length),
      // fstat reads the inode in memory, never the disk: done in place it costs ~1 µs, where a
      // round trip through the thread pool cost ~10 µs of this thread per commit
      stat: async () => fstatSync(handle.fd),
      close: () => handle.close(),
    };
  },
  readdir: (path) => readdir(path),
  mkdir: async (path) => {
    await mkdir(path, { recursive: true, mode: 0o700 });
  },
  rename: (from, to) => rename(from, to),
  unlink: (path) => unlink(path),
};

/** a new, renamed or removed file is durable only once its directory is synced too */
export async function syncDirectory(fs: LogFs, dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

/** writes every byte at `position`, looping over short writes */
export async function writeFully(file: LogFile, buffers: readonly Buffer[], position: number): Promise<number> {
  const pending = buffers.filter((b) => b.length > 0);
  let at = position;
  while (pending.length > 0) {
    let { bytesWritten } = await file.writev(pending, at);
    if (bytesWritten <= 0) throw new Error('write made no progress');
    at += bytesWritten;
    while (pending.length > 0 && bytesWritten >= pending[0]!.length) bytesWritten -= pending.shift()!.length;
    if (bytesWritten > 0) pending[0] = pending[0]!.subarray(bytesWritten);
  }
  return at - position;
}

export function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}

export async function removeIfPresent(fs: LogFs, path: string): Promise<void> {
  try {
    await fs.unlink(path);
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
}
