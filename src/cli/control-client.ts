import { parseConfigText } from '../config/text.js';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, resolve } from 'node:path';
import { configSchema } from '../config/schema.js';
import { controlSocketPath, type ControlRequest, type ControlResponse } from '../ops/control.js';

/** Where a command finds the running broker: its data directory, from `-c` (docs/operations.md). */
export interface Target {
  readonly socketPath: string;
  readonly configPath: string | null;
  /** seconds, for how long `whisker soft-stop` waits */
  readonly softStopTimeout: number;
  /** the file is not JSON and names no dataDirectory: the default one was tried (said if nothing answers there) */
  readonly configProblem: string | null;
}

/** a failure the command reports on stderr with this exit code */
export class CommandError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = 'CommandError';
    this.exitCode = exitCode;
  }
}

/**
 * The socket of the broker that `-c` configures; the built-in default's (./whisker-data) without
 * `-c`. Only `dataDirectory` and `softStopTimeout` are read, without validating the rest: a file
 * that is refused (even half-saved, no longer JSON) must still lead `whisker reload` to the broker
 * that says why. Loading no validator also keeps every command quick.
 */
export function locate(configPath: string | undefined, socketOverride?: string): Target {
  const base = configPath ? dirname(resolve(configPath)) : process.cwd();
  let fields: Record<string, unknown> = {};
  let configProblem: string | null = null;
  if (configPath) {
    let text: string;
    try {
      text = readFileSync(resolve(configPath), 'utf8');
    } catch (error) {
      throw new CommandError(`cannot read ${resolve(configPath)}: ${(error as Error).message}`, 2);
    }
    ({ fields, jsonError: configProblem } = looseFields(text));
    if (configProblem) configProblem = `${resolve(configPath)} is not valid JSON (${configProblem})`;
  }
  const dataDirectory = resolve(base, typeof fields.dataDirectory === 'string' ? fields.dataDirectory : defaults.dataDirectory.default);
  const softStopTimeout = typeof fields.softStopTimeout === 'number' ? fields.softStopTimeout : defaults.softStopTimeout.default;
  return { socketPath: socketOverride ?? controlSocketPath(dataDirectory), configPath: configPath ? resolve(configPath) : null, softStopTimeout, configProblem };
}

const defaults = configSchema.properties;

export interface AskOptions {
  readonly timeoutMs?: number;
  /** after the answer, wait for the broker to close the connection (it does once it has stopped) */
  readonly untilClosed?: boolean;
}

/** one request, one answer; a broker that is not running is a CommandError saying so */
export async function ask(target: Target, request: ControlRequest, options: AskOptions = {}): Promise<ControlResponse> {
  const timeoutMs = options.timeoutMs ?? 15_000;
  return new Promise<ControlResponse>((resolvePromise, reject) => {
    const socket = connect(target.socketPath);
    let buffered = '';
    let answer: ControlResponse | null = null;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new CommandError(answer ? `the broker did not stop within ${Math.round(timeoutMs / 1000)} s` : `no answer from ${target.socketPath} within ${Math.round(timeoutMs / 1000)} s`));
    }, timeoutMs);
    const finish = (error: Error | null) => {
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolvePromise(answer!);
    };
    socket.setEncoding('utf8');
    socket.once('connect', () => socket.write(JSON.stringify(request) + '\n'));
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      const newline = buffered.indexOf('\n');
      if (newline < 0 || answer) return;
      try {
        answer = JSON.parse(buffered.slice(0, newline)) as ControlResponse;
      } catch {
        return finish(new CommandError(`${target.socketPath} answered something that is not JSON`));
      }
      if (!options.untilClosed || !answer.ok) finish(null);
    });
    socket.once('close', () => finish(answer ? null : new CommandError(`the broker closed ${target.socketPath} without answering`)));
    socket.once('error', (error: NodeJS.ErrnoException) => {
      if ((error.code === 'ENOENT' || error.code === 'ECONNREFUSED') && target.configProblem) {
        // not "no broker": the broker may well run, from a data directory this file no longer says
        finish(new CommandError(`${target.configProblem}; nothing answers on ${target.socketPath}, the default data directory. Fix the file: a broker restarted on it would not start`, 2));
      } else if (error.code === 'ENOENT' || error.code === 'ECONNREFUSED') {
        finish(new CommandError(`no broker is running here: nothing answers on ${target.socketPath}${target.configPath ? ` (data directory of ${target.configPath})` : ' (built-in default; use -c CONFIG)'}`));
      } else if (error.code === 'EACCES') {
        finish(new CommandError(`permission denied on ${target.socketPath}: run the command as the broker's user (for example sudo -u whisker)`));
      } else {
        finish(new CommandError(`cannot reach ${target.socketPath}: ${error.message}`));
      }
    });
  });
}

/** the answer's result, or a CommandError with the broker's reason */
export function resultOf(response: ControlResponse, exitCode = 1): unknown {
  if (response.ok) return response.result;
  throw new CommandError(response.error.message, exitCode);
}

/**
 * `dataDirectory` and `softStopTimeout` of a file that may not even be JSON any more (a half-saved
 * edit); `jsonError` when it is not JSON and names no dataDirectory either
 */
function looseFields(text: string): { fields: Record<string, unknown>; jsonError: string | null } {
  try {
    const raw: unknown = parseConfigText(text, 'the config');
    return { fields: typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>) : {}, jsonError: null };
  } catch (error) {
    const match = /"dataDirectory"\s*:\s*("(?:[^"\\]|\\.)*")/.exec(text);
    if (match) {
      try {
        return { fields: { dataDirectory: JSON.parse(match[1]!) as unknown }, jsonError: null };
      } catch {
        // not even the string reads: the default it is
      }
    }
    return { fields: {}, jsonError: (error as Error).message };
  }
}

/**
 * One request, its answer, then the events the broker writes after it (`whisker tail`, the
 * progress of a soft stop) until the broker closes the connection or `stop` resolves. Resolves
 * with the answer's result once done; a refusal is a CommandError.
 */
export async function follow(target: Target, request: ControlRequest, onEvent: (event: unknown) => void, options: { stop?: Promise<void>; onAnswer?: (result: unknown) => void; exitCode?: number } = {}): Promise<unknown> {
  return new Promise<unknown>((resolvePromise, reject) => {
    const socket = connect(target.socketPath);
    let buffered = '';
    let answer: ControlResponse | null = null;
    let done = false;
    const finish = (error: Error | null) => {
      if (done) return;
      done = true;
      socket.destroy();
      if (error) reject(error);
      else resolvePromise(answer && answer.ok ? answer.result : undefined);
    };
    void options.stop?.then(() => finish(null));
    socket.setEncoding('utf8');
    socket.once('connect', () => socket.write(JSON.stringify(request) + '\n'));
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      let newline: number;
      while (!done && (newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        let parsed: unknown;
        try {
          parsed = JSON.parse(line);
        } catch {
          return finish(new CommandError(`${target.socketPath} answered something that is not JSON`));
        }
        if (!answer) {
          answer = parsed as ControlResponse;
          if (!answer.ok) return finish(new CommandError(answer.error.message, options.exitCode ?? 1));
          options.onAnswer?.(answer.result);
        } else {
          onEvent((parsed as { event: unknown }).event);
        }
      }
    });
    socket.once('close', () => finish(answer ? null : new CommandError(`the broker closed ${target.socketPath} without answering`)));
    socket.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'ECONNREFUSED') finish(new CommandError(`no broker is running here: nothing answers on ${target.socketPath}`));
      else finish(new CommandError(`cannot reach ${target.socketPath}: ${error.message}`));
    });
  });
}
