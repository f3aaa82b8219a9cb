// Server processes of the benchmark: free loopback ports, starting a server (node script or a
// binary from the system's packages), waiting until it listens, stopping it.
import { execFileSync, spawn } from 'node:child_process';
import { createConnection, createServer } from 'node:net';

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export async function waitForPort(port, proc, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${what} exited with ${proc.exitCode} before listening${proc.output ? `: ${proc.output.trim().split('\n').slice(-3).join(' / ').slice(0, 400)}` : ''}`);
    const ok = await new Promise((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${what} did not listen on ${port} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** a node script as a server process; its output is kept in `proc.output` */
export function spawnServer(args, cwd) {
  return spawnBinary(process.execPath, args, cwd);
}

/** any program as a server process (redis-server, nats-server...) */
export function spawnBinary(command, args, cwd) {
  const proc = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.output = '';
  proc.on('error', (error) => (proc.output += `${error.message}\n`));
  proc.stdout.on('data', (d) => (proc.output += d));
  proc.stderr.on('data', (d) => (proc.output += d));
  proc.exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  return proc;
}

export async function stopServer(proc) {
  if (proc.exitCode !== null || proc.signalCode !== null) return { code: proc.exitCode, signal: proc.signalCode, forced: false };
  proc.kill('SIGTERM');
  let timer;
  const timeout = new Promise((resolve) => (timer = setTimeout(() => resolve(null), 10_000)));
  const result = await Promise.race([proc.exited, timeout]);
  clearTimeout(timer);
  if (result) return { ...result, forced: false };
  proc.kill('SIGKILL');
  return { ...(await proc.exited), forced: true };
}

/** the path of `command` when it is installed (on PATH or in /usr/sbin), else null */
export function findCommand(command) {
  for (const candidate of [command, `/usr/sbin/${command}`, `/usr/bin/${command}`]) {
    try {
      execFileSync(candidate, ['--version'], { stdio: 'ignore', timeout: 5000 });
      return candidate;
    } catch {
      // not this one
    }
  }
  return null;
}
