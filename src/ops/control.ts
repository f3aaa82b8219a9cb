import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { isMainThread } from 'node:worker_threads';

/**
 * The control socket (docs/operations.md#the-control-socket): `<dataDirectory>/whisker.sock`,
 * mode 0600, one JSON object per line each way. The `whisker` commands are its only client.
 */
export const CONTROL_SOCKET_NAME = 'whisker.sock';
const MAX_REQUEST_BYTES = 64 * 1024;
/** sun_path holds 108 bytes on Linux, the last one NUL */
const MAX_SOCKET_PATH_BYTES = 107;

export const controlSocketPath = (dataDirectory: string): string => join(dataDirectory, CONTROL_SOCKET_NAME);

export interface ControlRequest {
  readonly command: string;
  readonly [argument: string]: unknown;
}

export interface ControlFailure {
  readonly code: string;
  readonly message: string;
  /** the config key at fault, for a refused reload */
  readonly key?: string;
}

export type ControlResponse = { readonly ok: true; readonly result: unknown } | { readonly ok: false; readonly error: ControlFailure };

/**
 * What a command that follows something (`whisker tail`) writes after its answer: one JSON
 * line per event, until the command's connection closes. A reader that does not keep up does
 * not make the broker buffer without bound: past `MAX_STREAM_BUFFER_BYTES` unsent, `write`
 * drops the event and says so by returning false.
 */
export interface ControlStream {
  write(event: unknown): boolean;
  /** called once, when the connection closes */
  onClose(listener: () => void): void;
}

export type ControlHandler = (request: ControlRequest, stream: ControlStream) => Promise<ControlResponse> | ControlResponse;

/** unsent event bytes one following connection may hold in the broker (docs/security.md) */
export const MAX_STREAM_BUFFER_BYTES = 1_048_576;

export class ControlError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'ControlError';
    this.code = code;
  }
}

export class ControlServer {
  readonly path: string;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #handler: ControlHandler = () => ({ ok: false, error: { code: 'E_STARTING', message: 'broker is starting' } });

  private constructor(path: string, server: Server) {
    this.path = path;
    this.#server = server;
    server.on('connection', (socket) => this.#serve(socket));
  }

  /** replaces a stale socket left by a broker that died; refuses if a live broker answers on it */
  static async open(path: string): Promise<ControlServer> {
    if (Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES) {
      throw new ControlError('E_CONTROL', `control socket path ${path} is longer than ${MAX_SOCKET_PATH_BYTES} bytes: use a shorter dataDirectory`);
    }
    await clearStale(path);
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // created 0600 (umask; bind is synchronous), not chmod-ed after: no moment when others
      // may connect. Worker threads cannot set the umask: there the chmod below is all
      const umask = isMainThread ? process.umask(0o177) : null;
      try {
        server.listen(path, () => {
          server.off('error', reject);
          chmodSync(path, 0o600);
          resolve();
        });
      } finally {
        if (umask !== null) process.umask(umask);
      }
    });
    return new ControlServer(path, server);
  }

  handle(handler: ControlHandler): void {
    this.#handler = handler;
  }

  /** answers already being written are sent; the socket file is removed */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of this.#sockets) socket.end(() => socket.destroy());
    await closed;
    try {
      if (lstatSync(this.path).isSocket()) unlinkSync(this.path);
    } catch {
      // already gone (libuv unlinks it on close)
    }
  }

  #serve(socket: Socket): void {
    this.#sockets.add(socket);
    socket.setEncoding('utf8');
    let buffered = '';
    let chain = Promise.resolve();
    const closeListeners: Array<() => void> = [];
    // events wait until the answer before them is written
    let answered = false;
    const early: string[] = [];
    const stream: ControlStream = {
      write(event) {
        if (socket.destroyed || socket.writableEnded) return false;
        if (socket.writableLength > MAX_STREAM_BUFFER_BYTES) return false;
        const line = JSON.stringify({ event }) + '\n';
        if (answered) socket.write(line);
        else early.push(line);
        return true;
      },
      onClose(listener) {
        closeListeners.push(listener);
      },
    };
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      if (buffered.length > MAX_REQUEST_BYTES) {
        socket.end(JSON.stringify({ ok: false, error: { code: 'E_PROTOCOL', message: 'request too long' } }) + '\n');
        return;
      }
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (line.trim() === '') continue;
        // in order, one at a time: `reload` then `status` on one connection sees the reload done
        chain = chain.then(async () => {
          const response = await this.#answer(line, stream);
          if (!socket.writableEnded) socket.write(JSON.stringify(response) + '\n');
          answered = true;
          for (const event of early.splice(0)) socket.write(event);
        });
      }
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      this.#sockets.delete(socket);
      for (const listener of closeListeners.splice(0)) listener();
    });
  }

  async #answer(line: string, stream: ControlStream): Promise<ControlResponse> {
    let request: unknown;
    try {
      request = JSON.parse(line);
    } catch {
      return { ok: false, error: { code: 'E_PROTOCOL', message: 'a request is one JSON object per line' } };
    }
    if (typeof request !== 'object' || request === null || typeof (request as ControlRequest).command !== 'string') {
      return { ok: false, error: { code: 'E_PROTOCOL', message: 'a request needs a "command" string' } };
    }
    try {
      return await this.#handler(request as ControlRequest, stream);
    } catch (error) {
      const code = error instanceof ControlError ? error.code : 'E_INTERNAL';
      return { ok: false, error: { code, message: (error as Error).message } };
    }
  }
}

async function clearStale(path: string): Promise<void> {
  try {
    if (!lstatSync(path).isSocket()) throw new ControlError('E_CONTROL', `${path} exists and is not a socket: not replaced`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  const answered = await new Promise<boolean>((resolve, reject) => {
    const probe = connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNREFUSED' ? resolve(false) : reject(error)));
  });
  if (answered) throw new ControlError('E_CONTROL', `another broker is running on this data directory: its control socket ${path} answers`);
  unlinkSync(path);
}
