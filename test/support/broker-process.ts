import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach } from 'vitest';

/**
 * Real `whisker` processes for the operator tests (reload, control socket, soft-stop, systemd):
 * `whisker start` in a temp dir, and the other commands run as the operator would, without
 * blocking this process (a client here may have to ack while a command waits).
 */
export const root = join(import.meta.dirname, '..', '..');
export const bin = join(root, 'bin', 'whisker');

const running = new Set<ChildProcess>();

afterEach(() => {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
});

export { freePort } from './harness.js';

/** writes `config.json` in `dir` (data, clients and keys inside `dir`); returns its path */
export function writeConfig(dir: string, config: Record<string, unknown>): string {
  const path = join(dir, 'config.json');
  writeFileSync(path, JSON.stringify({ dataDirectory: 'data', registeredClientsPath: 'clients', keysDirectory: 'keys', logLevel: 'info', ...config }, null, 2));
  return path;
}

export interface BrokerProcess {
  readonly child: ChildProcess;
  readonly url: string;
  /** `127.0.0.1:port@serviceId`, for `connect()` */
  readonly hostSpec: string;
  /** stdout (JSON log lines) and stderr so far */
  output(): string;
  /** resolves when `pattern` shows up in the output after `from` (an `output().length`) */
  waitFor(pattern: RegExp, from?: number, timeoutMs?: number): Promise<string>;
  /** the exit code */
  readonly exited: Promise<number | null>;
}

/** `wrap`: a command prefix the broker runs under (`ip netns exec <ns>`: the partition test) */
export async function startProcess(configPath: string, options: { args?: string[]; env?: NodeJS.ProcessEnv; cwd?: string; wrap?: string[]; startTimeoutMs?: number } = {}): Promise<BrokerProcess> {
  const command = [...(options.wrap ?? []), process.execPath, bin, 'start', '-c', configPath, ...(options.args ?? [])];
  const child = spawn(command[0]!, command.slice(1), {
    cwd: options.cwd ?? root,
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let text = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += chunk.toString();
    for (const listener of [...listeners]) listener();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      running.delete(child);
      resolve(code);
    }),
  );
  const waitFor = (pattern: RegExp, from = 0, timeoutMs = 10_000) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const match = pattern.exec(text.slice(from));
        if (!match) return false;
        cleanup();
        resolve(match[0]);
        return true;
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out waiting for ${pattern} in:\n${text}`));
      }, timeoutMs);
      const onExit = () => {
        if (check()) return;
        cleanup();
        reject(new Error(`broker exited while waiting for ${pattern}:\n${text}`));
      };
      const cleanup = () => {
        clearTimeout(timer);
        listeners.delete(listener);
        child.off('exit', onExit);
      };
      const listener = () => void check();
      listeners.add(listener);
      child.once('exit', onExit);
      check();
    });
  // 30 s by default: a node process under load 50 (other runs on the machine) took over 10 s to
  // print its first line; a broker that fails to start exits, and that rejects at once
  const line = await waitFor(/^.*"msg":"broker started".*$/m, 0, options.startTimeoutMs ?? 30_000);
  const url = /"url":"(ws:\/\/[^"]+)"/.exec(line)![1]!;
  const serviceId = /"serviceId":"([^"]+)"/.exec(line)![1]!;
  return { child, url, hostSpec: `${url.slice('ws://'.length)}@${serviceId}`, output: () => text, waitFor, exited };
}

export interface CommandResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `whisker ...args` as a separate process */
export function whisker(args: string[], options: { cwd?: string; timeoutMs?: number } = {}): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { cwd: options.cwd ?? root, stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`whisker ${args.join(' ')} did not finish: ${stdout}${stderr}`));
    }, options.timeoutMs ?? 15_000);
    child.once('close', (code) => {
      clearTimeout(timer);
      running.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
}
