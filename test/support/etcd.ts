import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach } from 'vitest';
import { freePort, tempDir } from './harness.js';

/**
 * A real etcd (Debian's etcd-server, 3.4) for the election tests: one member on loopback ports
 * (etcd takes no port 0: free ports are picked first) with a temp data dir, killed after each test.
 */
const running = new Set<ChildProcess>();

afterEach(() => {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
});

export interface EtcdProcess {
  /** `http://127.0.0.1:port`, for the election block's `etcd.hosts` */
  readonly url: string;
  readonly child: ChildProcess;
  /** SIGKILL, then the same member started again on the same ports and data */
  restart(): Promise<void>;
  kill(): Promise<void>;
}

export async function startEtcd(): Promise<EtcdProcess> {
  const dir = tempDir('whisker-etcd-');
  const clientPort = await freePort();
  const peerPort = await freePort();
  const url = `http://127.0.0.1:${clientPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const args = [
    '--name', 'e0', '--data-dir', dir,
    '--listen-client-urls', url, '--advertise-client-urls', url,
    '--listen-peer-urls', peerUrl, '--initial-advertise-peer-urls', peerUrl,
    '--initial-cluster', `e0=${peerUrl}`,
  ];
  let child!: ChildProcess;
  const launch = () =>
    new Promise<void>((resolve, reject) => {
      child = spawn('etcd', args, { stdio: ['ignore', 'pipe', 'pipe'] });
      running.add(child);
      let text = '';
      const onData = (chunk: Buffer) => {
        text += chunk.toString();
        if (text.includes('ready to serve client requests')) resolve();
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code) => {
        running.delete(child);
        reject(new Error(`etcd exited (${code}) before it was ready:\n${text}`));
      });
    });
  await launch();
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  };
  return {
    url,
    get child() {
      return child;
    },
    kill,
    async restart() {
      await kill();
      await launch();
    },
  };
}
