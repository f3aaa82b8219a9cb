import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * vitest.config.ts (before the workers start, so that they inherit it) and its globalSetup: every temporary file of one run (test folders, client key folders, the
 * brokers' and etcd's data of the process tests) goes under one folder, removed at the end.
 * Tests make temp folders with os.tmpdir(), which reads TMPDIR; the test workers and the
 * processes they start inherit it. Before, a run left thousands of folders in /tmp (client key
 * folders made once per file were never removed). WHISKER_KEEP_TMP=1 keeps the folder (its path
 * is printed) to read a failed run's data.
 */
export function makeTempRoot(): void {
  if (process.env.WHISKER_TEST_TMP) return;
  const root = mkdtempSync(join(tmpdir(), 'whisker-tests-'));
  process.env.WHISKER_TEST_TMP = root;
  process.env.TMPDIR = root;
}

export default function setup(): () => void {
  makeTempRoot();
  const root = process.env.WHISKER_TEST_TMP!;
  return () => {
    if (process.env.WHISKER_KEEP_TMP === '1') {
      console.log(`temporary files of this run kept in ${root}`);
      return;
    }
    rmSync(root, { recursive: true, force: true });
  };
}
