import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { afterAll, describe, expect, test } from 'vitest';
import { broker, connect, Inbox, until } from '../support/harness.js';

/**
 * Issue 27 (the nemesis beside the suite: 3 deliveries past the listener's dedupe): a message
 * the client already handled and acked comes back when its ack is lost with the connection
 * (the broker requeues it, nbRequeues 1) or when another broker delivers its own record of it.
 * The client's dedupe keyed on nbRequeues too, so that copy reached the handler again. SPEC §3:
 * "The client drops a delivery whose messageId (with its subscribedId) it already processed".
 * A message the handler nacked still comes back (that is what the nack asks for).
 * Real broker; a TCP proxy between the client and it loses the ack, then the connection.
 */
class LossyProxy {
  readonly #sockets = new Set<Socket>();
  #dropUpstream = false;
  readonly server: Server;

  constructor(targetPort: number) {
    this.server = createServer((inbound) => {
      const outbound = tcpConnect(targetPort, '127.0.0.1');
      for (const s of [inbound, outbound]) {
        this.#sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => {
          this.#sockets.delete(s);
          inbound.destroy();
          outbound.destroy();
        });
      }
      inbound.on('data', (chunk) => {
        if (!this.#dropUpstream) outbound.write(chunk);
      });
      outbound.on('data', (chunk) => inbound.write(chunk));
    });
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as { port: number }).port;
  }

  /** bytes from the client are dropped from now on (an ack lost on the way) */
  dropUpstream(): void {
    this.#dropUpstream = true;
  }

  /** every connection through it lost at once (no close frame); new ones pass again */
  loseConnections(): void {
    this.#dropUpstream = false;
    for (const s of this.#sockets) s.destroy();
  }

  close(): void {
    for (const s of this.#sockets) s.destroy();
    this.server.close();
  }
}

const proxies: LossyProxy[] = [];
afterAll(() => {
  for (const p of proxies) p.close();
});

describe("the client's dedupe", () => {
  test('a message the listener handled and acked, redelivered after the ack was lost with the connection, is not handled again', async () => {
    const b = await broker();
    const proxy = new LossyProxy(b.port);
    proxies.push(proxy);
    const port = await proxy.listen();
    const listened = new Inbox();
    const listener = await connect('dedupe-listener', `127.0.0.1:${port}@${b.config.serviceId}`);
    await listener.listen('jobs/v1/1', listened.listener).ready;
    const producer = await connect('dedupe-producer', b.hostSpec);

    proxy.dropUpstream();
    await producer.send('jobs/v1/1', { n: 1 });
    await listened.waitFor(1);
    await new Promise((r) => setTimeout(r, 200)); // the ack is written, and lost
    const reconnected = new Promise((resolve) => listener.once('reconnect', resolve));
    proxy.loseConnections();
    await reconnected;
    // the broker requeued the delivery (nbRequeues 1) and gives it again to the listener's group
    await producer.send('jobs/v1/1', { n: 2 });
    await listened.waitFor(2);
    await new Promise((r) => setTimeout(r, 500));
    expect(listened.items.map((i) => [(i.msg as { n: number }).n, i.info.nbRequeues ?? 0])).toEqual([
      [1, 0],
      [2, 0],
    ]);
  }, 20_000);

  test('a message the consumer nacked still comes back to it', async () => {
    const b = await broker();
    const got: Array<[number, number]> = [];
    const worker = await connect('dedupe-worker', b.hostSpec);
    await worker.consume('jobs/v1/1', (err, msg, done, info) => {
      got.push([(msg as { n: number }).n, info!.nbRequeues ?? 0]);
      done!(got.length > 1);
    }).ready;
    const producer = await connect('dedupe-producer', b.hostSpec);
    await producer.send('jobs/v1/1', { n: 1 });
    await until(() => got.length >= 2, 5_000, 'the nacked message again');
    expect(got).toEqual([
      [1, 0],
      [1, 1],
    ]);
  }, 20_000);
});
