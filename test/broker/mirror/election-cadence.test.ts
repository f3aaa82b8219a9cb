import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { electionCluster, nextMaster } from '../../support/election-cluster.js';
import { startEtcd } from '../../support/etcd.js';
import { freePort } from '../../support/harness.js';

/**
 * Issue 27's nemesis, on a loaded machine: a master whose etcd answers slowly (here 120 ms each
 * way, as under a load average of 15-20) must keep its role while every renewal is answered well
 * within the lease. Each lost role drops its followers (a new sync) and requeues what is in flight.
 */
const ONE_WAY_MS = 120;

/** a TCP relay to etcd that holds every chunk ONE_WAY_MS in each direction, in order */
async function slowLink(target: URL): Promise<{ url: string; server: Server }> {
  const sockets = new Set<Socket>();
  const server = createServer((inbound) => {
    const outbound = createConnection({ host: target.hostname, port: Number(target.port) });
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    const relay = (from: Socket, to: Socket) => {
      from.on('data', (chunk) => setTimeout(() => !to.destroyed && to.write(chunk), ONE_WAY_MS));
      from.on('close', () => setTimeout(() => to.destroy(), ONE_WAY_MS));
    };
    relay(inbound, outbound);
    relay(outbound, inbound);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  server.on('close', () => sockets.forEach((s) => s.destroy()));
  return { url: `http://127.0.0.1:${port}`, server };
}

let links: Server[] = [];
afterEach(() => {
  for (const server of links) server.close();
  links = [];
});

describe('election: renewal cadence (issue 27 nemesis)', () => {
  test('a master whose etcd answers in 240 ms round trips keeps delivering: no fence, no flap', async () => {
    const etcd = await startEtcd();
    const link = await slowLink(new URL(etcd.url));
    links.push(link.server);
    const nodes = await electionCluster([link.url], ['a']);
    const master = await nextMaster(nodes, new Map(), 20_000);
    const from = master.process!.output().length;
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    const after = master.process!.output().slice(from);
    const lost = after.split('\n').filter((line) => line.includes('no longer the elected master'));
    expect(lost, `the master lost its role ${lost.length} times in 8 s:\n${lost.slice(0, 3).join('\n')}`).toEqual([]);
  }, 60_000);
});
