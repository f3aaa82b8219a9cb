import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { startProcess, whisker, writeConfig } from '../support/broker-process.js';
import { connect, Inbox, tempDir } from '../support/harness.js';

/** Every `whisker` command against a real broker process, and against none (SPEC §11). */
const COMMANDS = [['reload'], ['soft-stop'], ['stop'], ['status'], ['list'], ['list', '-q', 'a/v1', '-m'], ['delete', '-q', 'a/v1', '--yes'], ['keys', 'list'], ['keys', 'revoke', 'someone']];

describe('no broker running', () => {
  test.each(COMMANDS)('whisker %s %s %s %s exits 1 saying so', async (...args) => {
    const dir = tempDir();
    const path = writeConfig(dir, { socketServer: { port: 0 } });
    const result = await whisker([...args, '-c', path]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('no broker is running here');
    expect(result.stderr).toContain(join(dir, 'data', 'whisker.sock'));
  });

  test('without -c the built-in default data directory is looked in', async () => {
    const dir = tempDir();
    const result = await whisker(['status'], { cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(join(dir, 'whisker-data', 'whisker.sock'));
  });
});

describe('against a running broker', () => {
  test('status, list, delete and the control socket itself', async () => {
    const dir = tempDir();
    const path = writeConfig(dir, { serviceId: 'ctl', socketServer: { port: 0 } });
    const broker = await startProcess(path);
    const socket = join(dir, 'data', 'whisker.sock');
    expect(statSync(socket).isSocket()).toBe(true);
    expect(statSync(socket).mode & 0o777).toBe(0o600);

    const producer = await connect('producer', broker.hostSpec);
    for (const id of ['eu', 'eu', 'us']) await producer.send(`orders/v1/${id}`, { secret: 'BODY-MARKER-42' });

    const status = await whisker(['status', '-c', path]);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^ctl: master, running, pid \d+, up \d+s/);
    expect(status.stdout).toContain(path);
    expect(JSON.parse((await whisker(['status', '--json', '-c', path])).stdout)).toMatchObject({ role: 'master', clients: 1, queues: 1, waiting: 3, configPath: path });

    const all = await whisker(['list', '-c', path]);
    expect(all.stdout).toMatch(/QUEUE\s+MESSAGES\s+WAITING\s+IN FLIGHT\s+IDS\norders\/v1\s+3\s+3\s+0\s+2\n/);
    const ids = await whisker(['list', '-q', 'orders/v1', '-c', path]);
    expect(ids.stdout).toMatch(/eu\s+2\n/);
    expect(ids.stdout).toMatch(/us\s+1\n/);
    const messages = JSON.parse((await whisker(['list', '-q', 'orders/v1', '-i', 'eu', '-m', '--json', '-c', path])).stdout);
    expect(messages.queues[0].messageList).toHaveLength(2);
    expect(messages.queues[0].messageList[0]).toMatchObject({ id: 'eu', from: 'producer', created: expect.any(Number), waitingForSubscriber: true });
    const table = await whisker(['list', '-q', 'orders/v1', '-m', '-c', path]);
    expect(table.stdout).toMatch(/MESSAGE ID\s+ID\s+CREATED\s+FROM\s+REQUEUES\s+STATE/);
    // no bodies: not in the listing, not in the info-level log
    expect(table.stdout + JSON.stringify(messages)).not.toContain('BODY-MARKER');
    expect(broker.output()).not.toContain('BODY-MARKER');

    const bad = await whisker(['list', '-q', 'orders', '-c', path]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('endpoint/version');
    const unconfirmed = await whisker(['delete', '-q', 'orders/v1', '-i', 'eu', '-c', path]);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toContain('--yes');
    const deleted = await whisker(['delete', '-q', 'orders/v1', '-i', 'eu', '--yes', '-c', path]);
    expect(deleted.stdout).toBe('deleted 2 messages from orders/v1 id eu\n');
    expect(JSON.parse((await whisker(['list', '--json', '-c', path])).stdout).queues).toMatchObject([{ queue: 'orders/v1', messages: 1 }]);

    // a second broker on the same data directory is refused: its store is in use
    const second = await whisker(['start', '-c', path]);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain('another broker is running on this data directory');
  });

  test('delete empties without unsubscribing: the consumer gets what comes next', async () => {
    const dir = tempDir();
    const path = writeConfig(dir, { serviceId: 'ctl-del', socketServer: { port: 0 } });
    const broker = await startProcess(path);
    const [consumer, producer] = await Promise.all([connect('consumer', broker.hostSpec), connect('producer', broker.hostSpec)]);
    const inbox = new Inbox();
    await producer.send('jobs/v1/1', { n: 1 });
    expect((await whisker(['delete', '-q', 'jobs/v1', '--yes', '-c', path])).stdout).toContain('deleted 1 messages');
    await consumer.consume('jobs/v1/1', inbox.consumer).ready;
    await producer.send('jobs/v1/1', { n: 2 });
    expect((await inbox.waitFor(1)).map((r) => r.msg)).toEqual([{ n: 2 }]);
  });

  test('keys list and keys revoke, which closes the connections of that name', async () => {
    const dir = tempDir();
    const path = writeConfig(dir, { serviceId: 'ctl-keys', socketServer: { port: 0 } });
    const broker = await startProcess(path);
    const victim = await connect('victim', broker.hostSpec, { reconnect: { initialMs: 10_000, maxMs: 10_000 } });
    await connect('bystander', broker.hostSpec);
    const listed = await whisker(['keys', 'list', '-c', path]);
    expect(listed.stdout).toMatch(/victim\s+[0-9a-f]{64}\s+1\n/);
    expect(listed.stdout).toMatch(/bystander\s+[0-9a-f]{64}\s+1\n/);

    const refused = new Promise((resolve) => victim.once('error', resolve));
    const revoked = await whisker(['keys', 'revoke', 'victim', '-c', path]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toMatch(/revoked the key of victim \(sha256 [0-9a-f]{64}\); 1 connections closed/);
    expect(await refused).toMatchObject({ code: 'E_AUTH', message: expect.stringMatching(/^The key of victim was revoked/), details: { reason: 'revoked' } });
    const after = JSON.parse((await whisker(['keys', 'list', '--json', '-c', path])).stdout);
    expect(after.keys.map((k: { name: string }) => k.name)).toEqual(['bystander']);
    expect(after.revoked).toBe(1);
    const again = await whisker(['keys', 'revoke', 'victim', '-c', path]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('no registered key');
  });

  test('whisker stop: the process exits 0 and the socket is gone; a socket left by kill -9 is replaced', async () => {
    const dir = tempDir();
    const path = writeConfig(dir, { serviceId: 'ctl-stop', socketServer: { port: 0 } });
    const killed = await startProcess(path);
    killed.child.kill('SIGKILL');
    await killed.exited;
    expect(existsSync(join(dir, 'data', 'whisker.sock'))).toBe(true);

    const broker = await startProcess(path);
    const stop = await whisker(['stop', '-c', path]);
    expect(stop.stdout).toBe('broker stopped\n');
    expect(await broker.exited).toBe(0);
    expect(existsSync(join(dir, 'data', 'whisker.sock'))).toBe(false);
  });
});
