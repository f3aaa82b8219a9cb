import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

/**
 * Network namespaces for the partition test (issue 13): one per node, each with a veth to a
 * bridge in a hub namespace, 10.77.<net>.<n>/24. Cuts drop packets silently, as a partition
 * does (no FIN, no RST), with iproute2 alone: a node cut from everyone has its hub-side veth
 * down; a pair is cut by pointing each side's neighbour entry for the other at a MAC nobody
 * has (the bridge floods it, no interface takes it). Root only; `unavailable()` says why not.
 */
const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' }).toString();

const DEAD_MAC = '02:00:00:00:de:ad';

export interface NetNode {
  readonly name: string;
  readonly ns: string;
  readonly address: string;
  /** the prefix that runs a command inside this node's namespace */
  readonly exec: string[];
}

/** null when namespaces can be made here, else the reason */
export function unavailable(): string | null {
  if (process.platform !== 'linux') return `network namespaces are Linux only (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  const probe = `whprobe-${randomBytes(3).toString('hex')}`;
  try {
    ip('netns', 'add', probe);
    ip('-n', probe, 'link', 'add', 'br0', 'type', 'bridge');
    ip('link', 'add', `${probe}a`, 'type', 'veth', 'peer', 'name', `${probe}b`);
    ip('link', 'del', `${probe}a`);
    return null;
  } catch (error) {
    return `cannot create network namespaces, bridges or veth pairs here: ${String((error as { stderr?: Buffer }).stderr ?? (error as Error).message).trim()}`;
  } finally {
    try {
      ip('netns', 'del', probe);
    } catch {
      // not made
    }
  }
}

export class Network {
  readonly #id = randomBytes(3).toString('hex');
  readonly #hub = `wh${this.#id}-hub`;
  readonly #net = 1 + (parseInt(this.#id, 16) % 250);
  readonly nodes = new Map<string, NetNode>();
  readonly #macs = new Map<string, string>();

  constructor() {
    ip('netns', 'add', this.#hub);
    ip('-n', this.#hub, 'link', 'add', 'br0', 'type', 'bridge');
    ip('-n', this.#hub, 'link', 'set', 'br0', 'up');
  }

  add(name: string): NetNode {
    const n = this.nodes.size + 1;
    const ns = `wh${this.#id}-${name}`;
    const hubSide = `v${this.#id}${name}`;
    ip('netns', 'add', ns);
    ip('link', 'add', hubSide, 'type', 'veth', 'peer', 'name', `e${this.#id}${name}`);
    ip('link', 'set', hubSide, 'netns', this.#hub);
    ip('link', 'set', `e${this.#id}${name}`, 'netns', ns);
    ip('-n', ns, 'link', 'set', `e${this.#id}${name}`, 'name', 'eth0');
    const address = `10.77.${this.#net}.${n}`;
    ip('-n', ns, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
    ip('-n', ns, 'link', 'set', 'eth0', 'up');
    ip('-n', ns, 'link', 'set', 'lo', 'up');
    ip('-n', this.#hub, 'link', 'set', hubSide, 'master', 'br0');
    ip('-n', this.#hub, 'link', 'set', hubSide, 'up');
    const mac = /link\/ether ([0-9a-f:]+)/.exec(ip('-n', ns, 'link', 'show', 'eth0'))![1]!;
    this.#macs.set(name, mac);
    const node = { name, ns, address, exec: ['ip', 'netns', 'exec', ns] };
    this.nodes.set(name, node);
    return node;
  }

  #node(name: string): NetNode {
    return this.nodes.get(name)!;
  }

  /** `name` cut from everyone: its port on the bridge goes down */
  isolate(name: string): void {
    ip('-n', this.#hub, 'link', 'set', `v${this.#id}${name}`, 'down');
  }

  rejoin(name: string): void {
    ip('-n', this.#hub, 'link', 'set', `v${this.#id}${name}`, 'up');
  }

  /** packets between `a` and `b` dropped both ways, every other path kept */
  cut(a: string, b: string): void {
    for (const [from, to] of [[a, b], [b, a]] as const) {
      ip('-n', this.#node(from).ns, 'neigh', 'replace', this.#node(to).address, 'lladdr', DEAD_MAC, 'dev', 'eth0', 'nud', 'permanent');
    }
  }

  heal(a: string, b: string): void {
    for (const [from, to] of [[a, b], [b, a]] as const) {
      ip('-n', this.#node(from).ns, 'neigh', 'replace', this.#node(to).address, 'lladdr', this.#macs.get(to)!, 'dev', 'eth0', 'nud', 'reachable');
    }
  }

  destroy(): void {
    for (const ns of [...[...this.nodes.values()].map((n) => n.ns), this.#hub]) {
      try {
        ip('netns', 'del', ns);
      } catch {
        // gone already
      }
    }
  }
}
