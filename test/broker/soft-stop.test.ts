import { describe, expect, test } from 'vitest';
import type { Done } from '../../src/client/types.js';
import { type BrokerProcess, startProcess, whisker, writeConfig } from '../support/broker-process.js';
import { connect, Inbox, tempDir, unconnected, clientConfig } from '../support/harness.js';

/** soft-stop (SPEC §9): refuse new work, let what is in flight finish, write it all, exit 0. */
async function holdingConsumer(broker: BrokerProcess) {
  const consumer = await connect('consumer', broker.hostSpec, { reconnect: { initialMs: 10_000, maxMs: 10_000 } });
  const held: Done[] = [];
  const inbox = new Inbox<unknown>();
  await consumer.consume('work/v1/1', (err, msg, done) => {
    if (err) throw err;
    held.push(done!);
    inbox.push(msg);
  }).ready;
  return { held, inbox };
}

async function messagesLeft(path: string): Promise<number> {
  const broker = await startProcess(path);
  const { queues } = JSON.parse((await whisker(['list', '--json', '-c', path])).stdout) as { queues: Array<{ messages: number }> };
  broker.child.kill('SIGKILL');
  await broker.exited;
  return queues.reduce((sum, q) => sum + q.messages, 0);
}

describe('soft-stop', () => {
  test('whisker soft-stop refuses sends and connections, waits for the ack in flight, then exits 0', async () => {
    const dir = tempDir();
    const path = writeConfig(dir, { serviceId: 'soft', socketServer: { port: 0 }, softStopTimeout: 20 });
    const broker = await startProcess(path);
    let exited = false;
    void broker.exited.then(() => (exited = true));
    const { held, inbox } = await holdingConsumer(broker);
    const producer = await connect('producer', broker.hostSpec);
    await producer.send('work/v1/1', { n: 1 });
    await producer.send('work/v1/1', { n: 2 }); // waits: prefetch 1
    await inbox.waitFor(1);

    const mark = broker.output().length;
    const command = whisker(['soft-stop', '-c', path], { timeoutMs: 25_000 });
    await broker.waitFor(/"msg":"soft stop: connections and sends refused/, mark);
    await expect(producer.send('work/v1/1', { n: 3 })).rejects.toMatchObject({ code: 'E_STOPPING' });
    await expect(unconnected().connect(clientConfig('late', broker.hostSpec, { connectTimeout: 2000 }))).rejects.toMatchObject({ code: 'E_STOPPING' });
    expect(exited).toBe(false);
    expect(inbox.length).toBe(1); // nothing new is delivered during the soft stop

    held[0]!();
    expect(await broker.exited).toBe(0);
    const result = await command;
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^broker stopped \(soft: 1 deliveries were in flight/);
    // the ack reached the store; the message that waited is still there for the next start
    expect(await messagesLeft(path)).toBe(1);
  });

  test('SIGTERM soft-stops too: past softStopTimeout it exits 0 and keeps the unacked message', async () => {
    const dir = tempDir();
    const path = writeConfig(dir, { serviceId: 'soft-term', socketServer: { port: 0 }, softStopTimeout: 0.5 });
    const broker = await startProcess(path);
    const { inbox } = await holdingConsumer(broker);
    const producer = await connect('producer', broker.hostSpec);
    await producer.send('work/v1/1', { n: 1 });
    await inbox.waitFor(1);

    const mark = broker.output().length;
    broker.child.kill('SIGTERM');
    expect(await broker.exited).toBe(0);
    expect(broker.output().slice(mark)).toMatch(/"inFlight":1[^\n]*"msg":"soft stop timed out/);
    expect(await messagesLeft(path)).toBe(1);
  });

  test('a second SIGTERM stops at once', async () => {
    const dir = tempDir();
    const path = writeConfig(dir, { serviceId: 'soft-twice', socketServer: { port: 0 }, softStopTimeout: 60 });
    const broker = await startProcess(path);
    const { inbox } = await holdingConsumer(broker);
    const producer = await connect('producer', broker.hostSpec);
    await producer.send('work/v1/1', { n: 1 });
    await inbox.waitFor(1);

    const mark = broker.output().length;
    broker.child.kill('SIGTERM');
    await broker.waitFor(/"msg":"soft stop: connections and sends refused/, mark);
    broker.child.kill('SIGTERM');
    expect(await broker.exited).toBe(0);
    expect(broker.output().slice(mark)).toContain('SIGTERM, stopping at once');
  });
});
