import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach } from 'vitest';
import { freePort, tempDir } from './harness.js';

/**
 * A real etcd (Debian's etcd-server, 3.4) for the election tests: members on loopback ports
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

/**
 * `inside`: run in a network namespace (test/support/netns.ts): listen on its address, on
 * fixed ports (nothing else listens there), the process started under its `exec` prefix
 */
export async function startEtcd(inside?: { address: string; exec: readonly string[] }): Promise<EtcdProcess> {
  if (inside) {
    const url = `http://${inside.address}:2379`;
    const peer = `http://${inside.address}:2380`;
    return startMember('e0', url, peer, `e0=${peer}`, inside.exec);
  }
  const [member] = await startEtcdCluster(1);
  return member!;
}

/** one member serving clients on `url` (a loopback address brokers were pointed at before it ran) */
export async function startEtcdAt(url: string): Promise<EtcdProcess> {
  const peer = `http://127.0.0.1:${await freePort()}`;
  return startMember('e0', url, peer, `e0=${peer}`);
}

/** `size` members of one etcd cluster, started together (a member waits for a quorum to serve) */
export async function startEtcdCluster(size: number): Promise<EtcdProcess[]> {
  const members = [];
  for (let i = 0; i < size; i++) members.push({ name: `e${i}`, client: `http://127.0.0.1:${await freePort()}`, peer: `http://127.0.0.1:${await freePort()}` });
  const initialCluster = members.map((m) => `${m.name}=${m.peer}`).join(',');
  return Promise.all(members.map((m) => startMember(m.name, m.client, m.peer, initialCluster)));
}

async function startMember(name: string, url: string, peerUrl: string, initialCluster: string, wrap: readonly string[] = []): Promise<EtcdProcess> {
  const dir = tempDir('whisker-etcd-');
  const args = [
    '--name', name, '--data-dir', dir,
    '--listen-client-urls', url, '--advertise-client-urls', url,
    '--listen-peer-urls', peerUrl, '--initial-advertise-peer-urls', peerUrl,
    '--initial-cluster', initialCluster, '--initial-cluster-token', `whisker-${process.pid}`,
  ];
  let child!: ChildProcess;
  const launch = () =>
    new Promise<void>((resolve, reject) => {
      const command = [...wrap, 'etcd', ...args];
      child = spawn(command[0]!, command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
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
