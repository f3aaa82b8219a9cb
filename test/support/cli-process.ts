import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { afterEach } from 'vitest';

/**
 * The built `whisker` command as a real child process, never spawnSync: the broker under test
 * runs in this process and must keep answering while the command waits for it.
 */
const bin = join(import.meta.dirname, '..', '..', 'bin', 'whisker');
const children = new Set<ChildProcessWithoutNullStreams>();

afterEach(() => {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
});

export interface Running {
  readonly child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** resolves once stdout or stderr (`which`) matches */
  waitFor(which: 'stdout' | 'stderr', pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** the exit code, once it exited */
  exited: Promise<number | null>;
}

export function start(args: string[], input?: string): Running {
  const child = spawn(process.execPath, [bin, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
  children.add(child);
  const out = { stdout: '', stderr: '' };
  const waiters: Array<{ which: 'stdout' | 'stderr'; pattern: RegExp; resolve: () => void }> = [];
  const check = () => {
    for (const w of [...waiters]) if (w.pattern.test(out[w.which])) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  };
  child.stdout.on('data', (chunk: Buffer) => { out.stdout += chunk.toString(); check(); });
  child.stderr.on('data', (chunk: Buffer) => { out.stderr += chunk.toString(); check(); });
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => { children.delete(child); resolve(code); }));
  if (input !== undefined) child.stdin.end(input);
  else child.stdin.end();
  return {
    child,
    stdout: () => out.stdout,
    stderr: () => out.stderr,
    exited,
    waitFor(which, pattern, timeoutMs = 10_000) {
      if (pattern.test(out[which])) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${pattern} on ${which} within ${timeoutMs} ms; stdout: ${out.stdout}; stderr: ${out.stderr}`)), timeoutMs);
        waiters.push({ which, pattern, resolve: () => { clearTimeout(timer); resolve(); } });
        void exited.then(() => setImmediate(() => {
          if (!pattern.test(out[which])) { clearTimeout(timer); reject(new Error(`exited without ${pattern} on ${which}; stdout: ${out.stdout}; stderr: ${out.stderr}`)); }
        }));
      });
    },
  };
}

/** runs the command to its end */
export async function run(args: string[], input?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const running = start(args, input);
  const code = await running.exited;
  return { code, stdout: running.stdout(), stderr: running.stderr() };
}
