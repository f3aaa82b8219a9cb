import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Network, unavailable } from '../support/netns.js';
import { freePort } from '../support/ports.js';
import { ProxyLinks } from './proxy.js';

/**
 * The nemesis's cluster (issue 27): one real etcd, three real broker processes with an
 * `election` block, a client process and one metrics sampler beside each broker. Links are cut
 * between network namespaces, one per node (test/support/netns.ts; root only), or else through
 * TCP proxies (proxy.ts). No vitest hook here: `npm run nemesis` runs it outside the test runner.
 */
export const root = join(import.meta.dirname, '..', '..');
const bin = join(root, 'bin', 'whisker');
const PORT = 7780;
const MANAGEMENT_PORT = 7781;
export const LEASE_TTL = 2;
export const HEARTBEAT_S = 2;
/** each consumer's prefetch; two consumers: 2 x PREFETCH is what a failover can deliver twice */
export const PREFETCH = 5;
/** each broker's dedupeWindow, s: its dedupe tables hold the ids of this long (the heap check waits for them to fill) */
export const DEDUPE_WINDOW_S = 60;
const LOG_KEEP = 4 << 20;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** a child process whose output is kept (the last LOG_KEEP characters) and can be waited on */
export class Proc {
  readonly child: ChildProcess;
  #text = '';
  #dropped = 0;
  readonly #listeners = new Set<() => void>();
  readonly exited: Promise<void>;

  constructor(command: readonly string[], options: { stdin?: boolean; onLine?: (line: string) => void; logFile?: string } = {}) {
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
      // the whole log beside the data, for reading a failed run after the fact
      if (options.logFile) appendFileSync(options.logFile, text);
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

export type LinkMode = 'netns' | 'proxy';

/** what cuts and heals the link between two nodes (a, b, c, e for etcd, k for the clients) */
interface Links {
  cut(x: string, y: string): void;
  heal(x: string, y: string): void;
  destroy(): void;
}

export interface BrokerNode {
  readonly name: string;
  /** the command prefix that runs a process beside it (its namespace), [] with proxies */
  readonly exec: string[];
  readonly configPath: string;
  readonly managementUrl: string;
  process: Proc | null;
  /** when its current process was spawned (ms epoch) */
  startedAt: number;
}

export interface Sample {
  readonly t: number;
  readonly up: 0 | 1;
  readonly role?: number;
  readonly delivered?: number;
  readonly heap?: number;
  readonly epoch?: number;
  /** whisker_peer_lag_messages: frames' items from the master not applied here yet */
  readonly lag?: number;
}

interface Place {
  readonly exec: string[];
  /** where it listens */
  readonly host: string;
  readonly port: number;
}

export class Cluster {
  readonly mode: LinkMode;
  readonly links: Links;
  readonly brokers: BrokerNode[] = [];
  readonly samples = new Map<string, Sample[]>();
  readonly #samplers: Proc[] = [];
  readonly dir = mkdtempSync(join(tmpdir(), 'whisker-nemesis-'));
  etcd: Proc | null = null;
  readonly #places: Map<string, Place>;
  /** host:port by which `from` reaches `to` */
  readonly #route: (from: string, to: string) => string;
  readonly #etcdPeerPort: number;
  readonly #log: (line: string) => void;

  private constructor(log: (line: string) => void, mode: LinkMode, links: Links, places: Map<string, Place>, route: (from: string, to: string) => string, etcdPeerPort: number, management: Map<string, string>) {
    this.#log = log;
    this.mode = mode;
    this.links = links;
    this.#places = places;
    this.#route = route;
    this.#etcdPeerPort = etcdPeerPort;
    for (const name of ['a', 'b', 'c']) {
      this.brokers.push({ name, exec: places.get(name)!.exec, configPath: join(this.dir, name, 'config.json'), managementUrl: management.get(name)!, process: null, startedAt: 0 });
    }
  }

  /** namespaces where they can be made (or `mode` says), else proxies */
  static async create(log: (line: string) => void, mode: LinkMode = unavailable() === null ? 'netns' : 'proxy'): Promise<Cluster> {
    const places = new Map<string, Place>();
    const management = new Map<string, string>();
    if (mode === 'netns') {
      const network = new Network();
      for (const name of ['e', 'a', 'b', 'c', 'k']) {
        const net = network.add(name);
        places.set(name, { exec: net.exec, host: net.address, port: name === 'e' ? 2379 : PORT });
        management.set(name, `http://127.0.0.1:${MANAGEMENT_PORT}/metrics`);
      }
      const route = (_from: string, to: string) => `${places.get(to)!.host}:${places.get(to)!.port}`;
      return new Cluster(log, mode, network, places, route, 2380, management);
    }
    const proxies = new ProxyLinks();
    for (const name of ['e', 'a', 'b', 'c', 'k']) {
      places.set(name, { exec: [], host: '127.0.0.1', port: await freePort() });
      management.set(name, `http://127.0.0.1:${await freePort()}/metrics`);
    }
    const routes = new Map<string, number>();
    for (const from of ['a', 'b', 'c', 'k']) {
      for (const to of ['a', 'b', 'c', 'e']) {
        if (from !== to && !(from === 'k' && to === 'e')) routes.set(`${from}>${to}`, await proxies.add(from, to, places.get(to)!.port));
      }
    }
    const route = (from: string, to: string) => `127.0.0.1:${routes.get(`${from}>${to}`)!}`;
    return new Cluster(log, mode, proxies, places, route, await freePort(), management);
  }

  /** the brokers as the client process reaches them */
  get hosts(): string[] {
    return this.brokers.map((b) => `${this.#route('k', b.name)}@${b.name}`);
  }

  get clientExec(): string[] {
    return this.#places.get('k')!.exec;
  }

  async start(): Promise<void> {
    await this.startEtcd();
    const prefix = `/whisker/nemesis-${process.pid}-${Date.now()}`;
    for (const broker of this.brokers) {
      mkdirSync(join(this.dir, broker.name), { recursive: true });
      const place = this.#places.get(broker.name)!;
      writeFileSync(broker.configPath, JSON.stringify({
        serviceId: broker.name, dataDirectory: 'data', registeredClientsPath: 'clients', keysDirectory: 'keys', logLevel: 'info',
        peers: this.brokers.filter((o) => o !== broker).map((o) => `${this.#route(broker.name, o.name)}@${o.name}`),
        socketServer: { host: place.host, port: place.port },
        management: { host: '127.0.0.1', port: Number(new URL(broker.managementUrl).port) },
        heartbeatTimeout: HEARTBEAT_S, requeueInterval: 30, maxItemsInQueue: 1_000_000, dedupeWindow: DEDUPE_WINDOW_S,
        channels: { 'feed/v1': { retention: { seconds: 86_400, maxBytes: 1 << 30 } }, 'jobs/v1': { prefetch: PREFETCH } },
        election: { etcd: { hosts: [`http://${this.#route(broker.name, 'e')}`] }, prefix, leaseTtl: LEASE_TTL },
      }, null, 2));
    }
    await Promise.all(this.brokers.map((b) => this.startBroker(b)));
    for (const broker of this.brokers) {
      const series: Sample[] = [];
      this.samples.set(broker.name, series);
      const sampler = new Proc([...broker.exec, process.execPath, join(root, 'test/nemesis/sampler.mjs'), broker.managementUrl, '250'], {
        stdin: true,
        onLine: (line) => series.push(JSON.parse(line) as Sample),
      });
      this.#samplers.push(sampler);
    }
  }

  async startEtcd(): Promise<void> {
    const place = this.#places.get('e')!;
    const url = `http://${place.host}:${place.port}`;
    const peer = `http://${place.host}:${this.#etcdPeerPort}`;
    const etcd = new Proc([...place.exec, 'etcd', '--name', 'e0', '--data-dir', join(this.dir, 'etcd'),
      '--listen-client-urls', url, '--advertise-client-urls', url, '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
      '--initial-cluster', `e0=${peer}`, '--initial-cluster-token', `nemesis-${process.pid}`]);
    this.etcd = etcd;
    await etcd.waitFor(/ready to serve client requests/, 0, 30_000, 'etcd ready');
  }

  async startBroker(broker: BrokerNode): Promise<void> {
    const proc = new Proc([...broker.exec, process.execPath, '--expose-gc', '--import', join(root, 'test/nemesis/gc-every.mjs'), bin, 'start', '-c', broker.configPath], { logFile: join(this.dir, `${broker.name}.log`) });
    broker.process = proc;
    broker.startedAt = Date.now();
    // a loaded 2-core machine has seen 30 s from spawn to listening
    await proc.waitFor(/"msg":"broker started"/, 0, 90_000, `broker ${broker.name} started`);
  }

  broker(name: string): BrokerNode {
    return this.brokers.find((b) => b.name === name)!;
  }

  /** the broker whose latest sample says master (the newest when two do); null when none does */
  master(): BrokerNode | null {
    let best: { broker: BrokerNode; t: number } | null = null;
    for (const broker of this.brokers) {
      const last = this.samples.get(broker.name)?.at(-1);
      if (last?.up === 1 && last.role === 1 && (!best || last.t > best.t)) best = { broker, t: last.t };
    }
    return best?.broker ?? null;
  }

  /** the sampled master, waiting up to `timeoutMs` for one */
  async waitMaster(timeoutMs: number): Promise<BrokerNode | null> {
    const until = Date.now() + timeoutMs;
    let master = this.master();
    while (!master && Date.now() < until) {
      await sleep(250);
      master = this.master();
    }
    return master;
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
    this.links.destroy();
  }
}
