import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { root } from './broker-process.js';
import { tempDir } from './harness.js';

/**
 * The environment of a broker process on a slow disk: every synced write (O_DSYNC/O_SYNC, fsync,
 * fdatasync) waits `us` first (test/nemesis/slowio.c, an LD_PRELOAD shim built for this run with gcc)
 */
export function slowIoEnv(us: number): NodeJS.ProcessEnv {
  const out = join(tempDir('whisker-slowio-'), 'slowio.so');
  try {
    execFileSync('gcc', ['-shared', '-fPIC', '-O2', '-o', out, join(root, 'test', 'nemesis', 'slowio.c'), '-ldl']);
  } catch (error) {
    throw new Error(`this test builds test/nemesis/slowio.c with gcc (.ci/run installs it): ${(error as Error).message}`);
  }
  return { ...process.env, LD_PRELOAD: out, SLOWIO_US: String(us) };
}
