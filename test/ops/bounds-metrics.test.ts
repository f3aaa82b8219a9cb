import '../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { connect as tcpConnect, type Socket } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { type BrokerProcess, freePort, startProcess, writeConfig } from '../support/broker-process.js';
import { connect, Inbox, tempDir } from '../support/harness.js';
import { rssMiB } from '../support/proc.js';
import { newKeyPair, RawPeer } from '../support/raw-peer.js';

/**
 * Issue 18, fault 3: scrapes of /metrics cannot freeze delivery or grow the broker. Measured on
 * a real broker process with 5,000 queues: a bystander's send-to-delivery time while 20 scrapes
 * run at once, and the broker's RSS (/proc) under 60 scrapes that never read their answer.
 */
const sockets: Socket[] = [];

afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
});

async function brokerWithQueues(queues: number): Promise<{ broker: BrokerProcess; managementPort: number }> {
  const managementPort = await freePort();
  const broker = await startProcess(writeConfig(tempDir(), { socketServer: { port: 0 }, management: { port: managementPort } }));
  const peer = await RawPeer.open(Number(new URL(broker.url).port));
  await peer.login('queue-maker', newKeyPair());
  const messages = Array.from({ length: queues }, (_, i) => ({ messageId: `m-${i}`, channel: `q${i}/v1/1`, data: { i }, created: 1 }));
  peer.sendJson({ type: 'publish', messages });
  await peer.next('results', () => true, 15_000);
  return { broker, managementPort };
}

async function scrape(port: number): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  return (await res.text()).length;
}

describe('/metrics under load', () => {
  test('20 scrapes at once with 5,000 queues: a bystander send is delivered within 1.5 s (one render, not twenty)', async () => {
    const { broker, managementPort } = await brokerWithQueues(5000);
    const bytes = await scrape(managementPort); // warm
    // unloaded, one render takes ~120 ms and 20 at once held a send 2.4 s; CI runs other files beside this one
    const bound = 1500;
    const [reader, writer] = await Promise.all([connect('scrape-reader', broker.hostSpec), connect('scrape-writer', broker.hostSpec)]);
    const inbox = new Inbox();
    await reader.listen('live/v1/1', inbox.listener).ready;
    const worst: number[] = [];
    let scraping = true;
    const scrapes = Promise.all(Array.from({ length: 20 }, () => scrape(managementPort))).finally(() => (scraping = false));
    // sends one after another for as long as the scrapes last
    for (let i = 0; scraping || i < 3; i++) {
      const sentAt = performance.now();
      await writer.send('live/v1/1', { i });
      await inbox.waitFor(i + 1, 20_000);
      worst.push(performance.now() - sentAt);
    }
    await scrapes;
    const max = Math.round(Math.max(...worst));
    console.log(`metrics: ${(bytes / 1024).toFixed(0)} KiB a scrape; 20 scrapes at once, ${worst.length} sends meanwhile, the slowest delivered in ${max} ms (bound ${bound} ms)`);
    expect(max).toBeLessThan(bound);
  }, 60_000);

  test('60 scrapes that never read their answer: the broker grows by less than 24 MiB', async () => {
    const { broker, managementPort } = await brokerWithQueues(5000);
    await scrape(managementPort);
    const pid = broker.child.pid!;
    const before = rssMiB(pid);
    for (let i = 0; i < 60; i++) {
      const socket = tcpConnect(managementPort, '127.0.0.1');
      sockets.push(socket);
      socket.on('error', () => {});
      socket.write(`GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      socket.pause(); // reads nothing: the answer waits in the broker
      // one a little after the other, as scrapers that time out and retry would
      if (i % 10 === 9) await scrape(managementPort);
    }
    // the broker answers a reader meanwhile
    await scrape(managementPort);
    const after = rssMiB(pid);
    console.log(`metrics: 60 unread scrapes, broker RSS ${before} -> ${after} MiB (+${(after - before).toFixed(1)} MiB, bound 24 MiB)`);
    expect(after - before).toBeLessThan(24);
  }, 60_000);
});
