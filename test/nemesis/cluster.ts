import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Network, type NetNode } from '../support/netns.js';

/**
 * The nemesis's cluster (issue 27): one real etcd, three real broker processes with an
 * `election` block, a client process and one metrics sampler beside each broker, each node in
 * its own network namespace (test/support/netns.ts; root only), and the faults it can suffer.
 * No vitest import here: `npm run nemesis` runs it outside the test runner.
 */
export const root = join(import.meta.dirname, '..', '..');
const bin = join(root, 'bin', 'whisker');
const PORT = 7780;
const MANAGEMENT_PORT = 7781;
export const LEASE_TTL = 2;
export const HEARTBEAT_S = 2;
/** each consumer's prefetch; two consumers: 2 x PREFETCH is what a failover can deliver twice */
export const PREFETCH = 5;
const LOG_KEEP = 4 << 20;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** a child process whose output is kept (the last LOG_KEEP characters) and can be waited on */
export class Proc {
  readonly child: ChildProcess;
  #text = '';
  #dropped = 0;
  readonly #listeners = new Set<() => void>();
  readonly exited: Promise<void>;

  constructor(command: readonly string[], options: { stdin?: boolean; onLine?: (line: string) => void } = {}) {
    this.child = spawn(command[0]!, command.slice(1), { cwd: root, stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    let partial = '';
    const onData = (chunk: Buffer) => {
      const text = chunk.toString();
      if (options.onLine) {
        const lines = (partial + text).split('\n');
        partial = lines.pop()!;
        for (const line of lines) options.onLine(line);
        return;
      }
      this.#text += text;
      if (this.#text.length > LOG_KEEP * 2) {
        this.#dropped += this.#text.length - LOG_KEEP;
        this.#text = this.#text.slice(-LOG_KEEP);
      }
      for (const listener of [...this.#listeners]) listener();
    };
    this.child.stdout!.on('data', onData);
    this.child.stderr!.on('data', (chunk: Buffer) => (options.onLine ? process.stderr.write(chunk) : onData(chunk)));
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** the absolute length of the output so far: a later `waitFor` reads only what follows */
  get mark(): number {
    return this.#dropped + this.#text.length;
  }

  tail(chars = 3000): string {
    return this.#text.slice(-chars);
  }

  waitFor(pattern: RegExp, from: number, timeoutMs: number, what: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const match = pattern.exec(this.#text.slice(Math.max(0, from - this.#dropped)));
        if (!match) return;
        done();
        resolve(match[0]);
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out (${timeoutMs} ms) waiting for ${what}:\n${this.tail()}`));
      }, timeoutMs);
      const onExit = () => {
        check();
        done();
        reject(new Error(`exited while waiting for ${what}:\n${this.tail()}`));
      };
      const done = () => {
        clearTimeout(timer);
        this.#listeners.delete(check);
        this.child.off('exit', onExit);
      };
      this.#listeners.add(check);
      this.child.once('exit', onExit);
      check();
    });
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (!this.alive) return;
    this.child.kill(signal);
    await this.exited;
  }
}

export interface BrokerNode {
  readonly name: string;
  readonly net: NetNode;
  readonly configPath: string;
  process: Proc | null;
}

export interface Sample {
  readonly t: number;
  readonly up: 0 | 1;
  readonly role?: number;
  readonly delivered?: number;
  readonly heap?: number;
  readonly epoch?: number;
}

export class Cluster {
  readonly network = new Network();
  readonly brokers: BrokerNode[] = [];
  readonly samples = new Map<string, Sample[]>();
  readonly #samplers: Proc[] = [];
  readonly dir = mkdtempSync(join(tmpdir(), 'whisker-nemesis-'));
  etcd: Proc | null = null;
  readonly #etcdNet: NetNode;
  readonly clientNet: NetNode;
  readonly #log: (line: string) => void;

  constructor(log: (line: string) => void) {
    this.#log = log;
    this.#etcdNet = this.network.add('e');
    for (const name of ['a', 'b', 'c']) {
      const net = this.network.add(name);
      this.brokers.push({ name, net, configPath: join(this.dir, name, 'config.json'), process: null });
    }
    this.clientNet = this.network.add('k');
  }

  get hosts(): string[] {
    return this.brokers.map((b) => `${b.net.address}:${PORT}@${b.name}`);
  }

  async start(): Promise<void> {
    await this.startEtcd();
    const prefix = `/whisker/nemesis-${process.pid}-${Date.now()}`;
    for (const broker of this.brokers) {
      const dir = join(this.dir, broker.name);
      mkdirSync(dir, { recursive: true });
      writeFileSync(broker.configPath, JSON.stringify({
        serviceId: broker.name, dataDirectory: 'data', registeredClientsPath: 'clients', keysDirectory: 'keys', logLevel: 'info',
        peers: this.brokers.filter((o) => o !== broker).map((o) => `${o.net.address}:${PORT}@${o.name}`),
        socketServer: { host: broker.net.address, port: PORT },
        management: { host: '127.0.0.1', port: MANAGEMENT_PORT },
        heartbeatTimeout: HEARTBEAT_S, requeueInterval: 30, maxItemsInQueue: 1_000_000, dedupeWindow: 60,
        channels: { 'feed/v1': { retention: { seconds: 86_400, maxBytes: 1 << 30 } }, 'jobs/v1': { prefetch: PREFETCH } },
        election: { etcd: { hosts: [`http://${this.#etcdNet.address}:2379`] }, prefix, leaseTtl: LEASE_TTL },
      }, null, 2));
    }
    await Promise.all(this.brokers.map((b) => this.startBroker(b)));
    for (const broker of this.brokers) {
      const series: Sample[] = [];
      this.samples.set(broker.name, series);
      const sampler = new Proc([...broker.net.exec, process.execPath, join(root, 'test/nemesis/sampler.mjs'), `http://127.0.0.1:${MANAGEMENT_PORT}/metrics`, '250'], {
        stdin: true,
        onLine: (line) => series.push(JSON.parse(line) as Sample),
      });
      this.#samplers.push(sampler);
    }
  }

  async startEtcd(): Promise<void> {
    const url = `http://${this.#etcdNet.address}:2379`;
    const peer = `http://${this.#etcdNet.address}:2380`;
    const etcd = new Proc([...this.#etcdNet.exec, 'etcd', '--name', 'e0', '--data-dir', join(this.dir, 'etcd'),
      '--listen-client-urls', url, '--advertise-client-urls', url, '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
      '--initial-cluster', `e0=${peer}`, '--initial-cluster-token', `nemesis-${process.pid}`]);
    this.etcd = etcd;
    await etcd.waitFor(/ready to serve client requests/, 0, 30_000, 'etcd ready');
  }

  async startBroker(broker: BrokerNode): Promise<void> {
    const proc = new Proc([...broker.net.exec, process.execPath, bin, 'start', '-c', broker.configPath]);
    broker.process = proc;
    await proc.waitFor(/"msg":"broker started"/, 0, 30_000, `broker ${broker.name} started`);
  }

  broker(name: string): BrokerNode {
    return this.brokers.find((b) => b.name === name)!;
  }

  /** the broker whose latest answered sample says master; null when none does */
  master(): BrokerNode | null {
    let best: { broker: BrokerNode; t: number } | null = null;
    for (const broker of this.brokers) {
      const last = this.samples.get(broker.name)?.findLast((s) => s.up === 1);
      if (last?.role === 1 && (!best || last.t > best.t)) best = { broker, t: last.t };
    }
    return best?.broker ?? null;
  }

  /** waits until one broker samples as master and the other two as slaves (all up) */
  async settled(timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      const lasts = this.brokers.map((b) => this.samples.get(b.name)?.at(-1));
      if (lasts.every((s) => s?.up === 1) && lasts.filter((s) => s!.role === 1).length === 1) return true;
      await sleep(250);
    }
    return false;
  }

  /** `whisker <args> -c <broker's config>`, as an operator runs it */
  async whisker(broker: BrokerNode, args: string[], timeoutMs = 60_000): Promise<{ code: number | null; out: string }> {
    const proc = new Proc([process.execPath, bin, ...args, '-c', broker.configPath]);
    const timer = setTimeout(() => void proc.kill(), timeoutMs);
    await proc.exited;
    clearTimeout(timer);
    return { code: proc.child.exitCode, out: proc.tail(10_000) };
  }

  /** messages each broker's queues still hold, per queue */
  async held(): Promise<Record<string, Record<string, number> | string>> {
    const result: Record<string, Record<string, number> | string> = {};
    for (const broker of this.brokers) {
      const { code, out } = await this.whisker(broker, ['list', '--json'], 15_000);
      if (code !== 0) {
        result[broker.name] = `whisker list failed (${code}): ${out.slice(0, 300)}`;
        continue;
      }
      const { queues } = JSON.parse(out) as { queues: Array<{ queue: string; messages: number }> };
      result[broker.name] = Object.fromEntries(queues.map((q) => [q.queue, q.messages]));
    }
    return result;
  }

  log(line: string): void {
    this.#log(line);
  }

  async destroy(): Promise<void> {
    for (const sampler of this.#samplers) await sampler.kill();
    for (const broker of this.brokers) await broker.process?.kill();
    await this.etcd?.kill();
    this.network.destroy();
  }
}
