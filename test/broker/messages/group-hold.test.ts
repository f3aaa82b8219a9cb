import { type ChildProcess, spawn } from 'node:child_process';
import { once as onceEvent } from 'node:events';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { root } from '../../support/broker-process.js';
import { startBroker } from '../../../src/server/start.js';
import { broker, brokerConfig, clientConfig, connect, Inbox, tempDir } from '../../support/harness.js';

/**
 * Issue 27 (the nemesis, seed 2027): a client whose connection is lost, not closed by it, keeps
 * its groups on the broker for `groupHold`: what is accepted meanwhile reaches its listener AND
 * its consumer group when it subscribes again, whichever subscribes first. Before, both groups
 * went with the connection, the messages waited for "the first new group", and the other one
 * never got them (a lost listener or a lost work queue). A client's own disconnect() leaves
 * nothing held, as before. Real broker, the lost client a real process killed with SIGKILL.
 */
const CHANNEL = 'jobs/v1/1';
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
});

/** a process with a listener (`hold-listener`) and a consumer (`hold-worker`) on CHANNEL, subscribed */
async function subscribedProcess(hosts: string): Promise<ChildProcess> {
  const options = { listener: clientConfig('hold-listener', hosts), worker: clientConfig('hold-worker', hosts), channel: CHANNEL };
  const child = spawn(process.execPath, [join(root, 'test/support/group-hold-client.mjs'), JSON.stringify(options)], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('ready\n')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the client process exited (${code}) before subscribing`)));
  });
  return child;
}

async function sendTen(hosts: string, tag: string): Promise<void> {
  const producer = await connect('hold-producer', hosts);
  for (let i = 0; i < 10; i++) await producer.send(CHANNEL, { tag, i });
  await producer.disconnect();
}

/** the listener subscribes again first, then the consumer group: what each gets */
async function comeBack(hosts: string): Promise<{ listened: number; consumed: number }> {
  const listened = new Inbox();
  const consumed = new Inbox();
  const listener = await connect('hold-listener', hosts);
  await listener.listen(CHANNEL, listened.listener).ready;
  await listened.waitFor(10, 3_000).catch(() => undefined);
  const worker = await connect('hold-worker', hosts);
  await worker.consume(CHANNEL, consumed.consumer).ready;
  await consumed.waitFor(10, 3_000).catch(() => undefined);
  await new Promise((r) => setTimeout(r, 200));
  await Promise.all([listener.disconnect(), worker.disconnect()]);
  return { listened: listened.length, consumed: consumed.length };
}

describe('groups of a lost connection are held (groupHold)', () => {
  test('a client killed, messages sent, the client back: its listener and its consumer group both get every message', async () => {
    const b = await broker({ groupHold: 60 });
    const child = await subscribedProcess(b.hostSpec);
    child.kill('SIGKILL');
    await onceEvent(child, 'exit');
    await new Promise((r) => setTimeout(r, 300)); // the broker sees the connections close
    await sendTen(b.hostSpec, 'while-away');
    expect(await comeBack(b.hostSpec)).toEqual({ listened: 10, consumed: 10 });
  }, 30_000);

  test('no member back within groupHold: the groups go, and the messages wait for the first new group (as after a disconnect())', async () => {
    const b = await broker({ groupHold: 1 });
    const child = await subscribedProcess(b.hostSpec);
    child.kill('SIGKILL');
    await onceEvent(child, 'exit');
    await new Promise((r) => setTimeout(r, 1_500));
    await sendTen(b.hostSpec, 'after-the-hold');
    expect(await comeBack(b.hostSpec)).toEqual({ listened: 10, consumed: 0 });
  }, 30_000);

  test("the client's own disconnect() holds nothing", async () => {
    const b = await broker({ groupHold: 60 });
    const child = await subscribedProcess(b.hostSpec);
    const gone = new Promise<void>((resolve) => child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('disconnected') && resolve()));
    child.stdin!.write('disconnect\n');
    await gone;
    await new Promise((r) => setTimeout(r, 300));
    await sendTen(b.hostSpec, 'after-disconnect');
    expect(await comeBack(b.hostSpec)).toEqual({ listened: 10, consumed: 0 });
    child.kill('SIGKILL');
  }, 30_000);

  /** the client's groups made on a broker in `dir`, the broker stopped, started again on that data: what each group gets */
  async function acrossRestart(groupHold: number): Promise<{ listened: number; consumed: number }> {
    const dir = tempDir();
    const first = await startBroker(brokerConfig({ groupHold }, dir));
    const child = await subscribedProcess(`127.0.0.1:${first.port}@${first.config.serviceId}`);
    await first.stop(); // the broker closes the client's connections: lost to the client
    child.kill('SIGKILL');
    const again = await startBroker(brokerConfig({ groupHold }, dir));
    try {
      const hosts = `127.0.0.1:${again.port}@${again.config.serviceId}`;
      await sendTen(hosts, 'after-restart');
      return await comeBack(hosts);
    } finally {
      await again.stop();
    }
  }

  test('a restarted broker holds the groups it had (groups.json): the listener back first, the consumer group still gets every message', async () => {
    expect(await acrossRestart(60)).toEqual({ listened: 10, consumed: 10 });
  }, 30_000);

  test('groupHold 0: a restart holds nothing, the first group back takes what waited', async () => {
    expect(await acrossRestart(0)).toEqual({ listened: 10, consumed: 0 });
  }, 30_000);
});
