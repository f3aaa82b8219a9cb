import { dirname, resolve } from 'node:path';
import { watch } from 'chokidar';

export const RELOAD_DEBOUNCE_MS = 200;

export interface ConfigWatcher {
  close(): Promise<void>;
}

/**
 * Calls `onChange` once the config file has been quiet for `debounceMs` after a change.
 * The folder is watched, not the file: editors that save by writing a new file and renaming it
 * over the old one replace the inode a file watch would follow (docs/operations.md#reload).
 */
export async function watchConfigFile(path: string, onChange: () => void, onError: (error: Error) => void, debounceMs = RELOAD_DEBOUNCE_MS): Promise<ConfigWatcher> {
  const file = resolve(path);
  const folder = dirname(file);
  const watcher = watch(folder, {
    ignoreInitial: true,
    depth: 0,
    // only the folder itself and the file: a config kept next to many files costs nothing more
    ignored: (candidate: string) => candidate !== folder && candidate !== file,
  });
  let timer: NodeJS.Timeout | null = null;
  const changed = (changedPath: string) => {
    if (resolve(changedPath) !== file) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      onChange();
    }, debounceMs);
  };
  // an `unlink` alone (a rename under way) is followed by an `add`; reloading a missing file would only fail
  watcher.on('add', changed).on('change', changed).on('error', (error) => onError(error as Error));
  await new Promise<void>((ready) => watcher.once('ready', ready));
  return {
    async close() {
      if (timer) clearTimeout(timer);
      timer = null;
      await watcher.close();
    },
  };
}
