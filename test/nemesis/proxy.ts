import { createServer, type Server, type Socket, connect } from 'node:net';

/**
 * Links that can be cut without network namespaces (issue 27: where they cannot be made, e.g.
 * not root): every connection between two nodes goes through a TCP proxy here, one listening
 * port per (from, to) pair. A cut pauses both directions of every connection of the pair, as
 * dropped packets do (no FIN, no RST; heartbeats then close the link), and holds new ones
 * without a byte through; a heal lets what waited through, as TCP retransmits after a partition.
 */
interface Pair {
  readonly from: string;
  readonly to: string;
  readonly server: Server;
  readonly port: number;
  readonly sockets: Set<Socket>;
}

export class ProxyLinks {
  readonly #pairs: Pair[] = [];
  readonly #cut = new Set<string>();

  /** a proxy port through which `from` reaches `to` listening on 127.0.0.1:`targetPort` */
  async add(from: string, to: string, targetPort: number): Promise<number> {
    const sockets = new Set<Socket>();
    const server = createServer((inbound) => {
      const outbound = connect(targetPort, '127.0.0.1');
      for (const [a, b] of [[inbound, outbound], [outbound, inbound]] as const) {
        sockets.add(a);
        a.on('data', (chunk) => {
          if (!b.write(chunk)) a.pause();
        });
        b.on('drain', () => {
          if (!this.isCut(from, to)) a.resume();
        });
        a.on('error', () => b.destroy());
        a.on('close', () => {
          sockets.delete(a);
          b.destroy();
        });
        if (this.isCut(from, to)) a.pause();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    this.#pairs.push({ from, to, server, port, sockets });
    return port;
  }

  isCut(x: string, y: string): boolean {
    return this.#cut.has([x, y].sort().join('|'));
  }

  cut(x: string, y: string): void {
    this.#cut.add([x, y].sort().join('|'));
    for (const pair of this.#of(x, y)) for (const socket of pair.sockets) socket.pause();
  }

  heal(x: string, y: string): void {
    this.#cut.delete([x, y].sort().join('|'));
    for (const pair of this.#of(x, y)) for (const socket of pair.sockets) socket.resume();
  }

  destroy(): void {
    for (const pair of this.#pairs) {
      for (const socket of pair.sockets) socket.destroy();
      pair.server.close();
    }
  }

  #of(x: string, y: string): Pair[] {
    return this.#pairs.filter((p) => (p.from === x && p.to === y) || (p.from === y && p.to === x));
  }
}
