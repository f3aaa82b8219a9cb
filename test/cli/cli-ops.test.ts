import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { Done } from '../../src/client/types.js';
import { startBroker } from '../../src/server/start.js';
import { broker, brokerConfig, connect, freePort, Inbox, tempDir, until, type TestBroker } from '../support/harness.js';
import { run, start } from '../support/cli-process.js';

/** `whisker pub/sub/tail/peek/stat/dlq` and `status` against a real broker (issue 17); needs `npm run build`. */
const socketOf = (b: TestBroker) => ['--socket', join(b.config.dataDirectory, 'whisker.sock')];
const keys = tempDir('whisker-cli-keys-');
const as = (b: TestBroker, name = 'cli-user') => ['--host', b.hostSpec, '--client', name, '--keys', keys];
const HOSTILE = 'x\u001b[2J\u009b31m<b>';

describe('pub and peek', () => {
  test('pub sends JSON or a string; peek shows metadata, bodies only with showBodies; a hostile body stays inert', async () => {
    const b = await broker({ showBodies: false });
    const sent = await run(['pub', 'jobs/v1/a', '{"n":1}', ...as(b)]);
    expect(sent.stderr).toBe('');
    expect(sent.code).toBe(0);
    const messageId = /^sent ([0-9a-f]{32})$/m.exec(sent.stdout)![1]!;
    expect(b.router.queues.get('jobs/v1')!.message(messageId)!.data).toEqual({ n: 1 });
    expect((await run(['pub', 'jobs/v1/a', 'plain words', ...as(b)])).code).toBe(0);

    const peeked = await run(['peek', 'jobs/v1', ...socketOf(b)]);
    expect(peeked.code).toBe(0);
    expect(peeked.stdout).toMatch(/^MESSAGE ID +ID +CREATED +FROM +REQUEUES +STATE\n/);
    expect(peeked.stdout).toContain(messageId);
    expect(peeked.stdout).toContain('cli-user');
    expect(peeked.stdout).toContain('no subscriber yet');
    expect(peeked.stdout).not.toContain('"n":1');
    expect(peeked.stdout).toContain('2 of 2 held; bodies hidden');
    // peek took nothing
    expect(b.router.queues.get('jobs/v1')!.size).toBe(2);

    const open = await broker({ showBodies: true });
    // an id with control characters is refused (SPEC §2); the body still carries them
    const refusedId = await run(['pub', `jobs/v1/${encodeURIComponent(HOSTILE)}`, JSON.stringify({ text: HOSTILE }), ...as(open)]);
    expect(refusedId.code).toBe(1);
    expect(refusedId.stderr).toContain('E_BAD_CHANNEL');
    expect((await run(['pub', 'jobs/v1/hostile', JSON.stringify({ text: HOSTILE }), ...as(open)])).code).toBe(0);
    const shown = await run(['peek', 'jobs/v1', '-n', '5', ...socketOf(open)]);
    expect(shown.stdout).toMatch(/ DATA\n/);
    expect(shown.stdout).toContain('{"text":"x\\u001b[2J\\u009b31m<b>"}');
    expect(shown.stdout).toContain('x\\u001b[2J\\u009b31m<b>');
    // no raw control character reaches the terminal
    expect([...shown.stdout].filter((c) => c !== "\n" && (c < " " || (c >= "\u007f" && c <= "\u009f")))).toEqual([]);
  });

  test('pub - sends one message per line of stdin; a refused send exits 1 with its code', async () => {
    const b = await broker({ channels: { 'jobs/v1': { map: { n: ['int'] } } } });
    const piped = await run(['pub', 'jobs/v1/a', '-', ...as(b)], '{"n":1}\n{"n":2}\n\n{"n":3}\n');
    expect(piped.code).toBe(0);
    expect(piped.stdout.match(/^sent /gm)).toHaveLength(3);
    expect(b.router.queues.get('jobs/v1')!.size).toBe(3);
    const refused = await run(['pub', 'jobs/v1/a', '{"n":"nope"}', ...as(b)]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('E_SCHEMA');
    expect((await run(['pub', 'jobs/v1/a', ...as(b)])).code).toBe(2);
  });
});

describe('sub and tail', () => {
  test('sub listens and prints each message, --json one object a line, --count stops', async () => {
    const b = await broker();
    const producer = await connect('producer', b.hostSpec);
    const sub = start(['sub', 'news/v1/*', '--count', '2', '--json', ...as(b, 'cli-sub')]);
    await sub.waitFor('stderr', /listening to news\/v1\/\* as cli-sub/);
    await producer.send('news/v1/a', { k: 1 });
    await producer.send('news/v1/b', HOSTILE);
    expect(await sub.exited).toBe(0);
    const lines = sub.stdout().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l.channel, l.from, l.data])).toEqual([['news/v1/a', 'producer', { k: 1 }], ['news/v1/b', 'producer', HOSTILE]]);
  });

  test('tail follows a queue without taking: the consumer gets every message, a message nobody wants still waits', async () => {
    const b = await broker();
    const [worker, producer] = await Promise.all([connect('worker', b.hostSpec), connect('producer', b.hostSpec)]);
    const inbox = new Inbox();
    await worker.consume('jobs/v1/a', inbox.consumer).ready;
    const tail = start(['tail', 'jobs/v1', '--count', '3', ...socketOf(b)]);
    await tail.waitFor('stderr', /following jobs\/v1, taking nothing, bodies hidden/);
    await producer.send('jobs/v1/a', 1);
    await producer.send('jobs/v1/a', 2);
    await producer.send('jobs/v1/nobody', 3);
    expect(await tail.exited).toBe(0);
    await inbox.waitFor(2);
    const lines = tail.stdout().trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT\S+Z {2}jobs\/v1\/a {2}producer {2}[0-9a-f]{32}$/);
    expect(lines[2]).toContain('jobs/v1/nobody');
    const queue = b.router.queues.get('jobs/v1')!;
    await until(() => queue.counters.acked === 2, 5000, 'two acks');
    expect(queue.depth).toBe(1); // the tail did not take it
  });
});

describe('stat', () => {
  test('a line of rates and counts every interval', async () => {
    const b = await broker();
    const producer = await connect('producer', b.hostSpec);
    const stat = start(['stat', 'jobs/v1', '--interval', '0.5', '--count', '2', ...socketOf(b)]);
    await stat.waitFor('stdout', /DEPTH +IN FLIGHT +CONSUMERS +OLDEST s +IN\/s +OUT\/s/);
    for (let i = 0; i < 10; i++) await producer.send('jobs/v1/a', i);
    expect(await stat.exited).toBe(0);
    const rows = stat.stdout().trim().split('\n').slice(2).map((l) => l.trim().split(/\s+/).map(Number));
    expect(rows).toHaveLength(2);
    expect(rows[1]![0]).toBe(10); // depth
    expect(rows[0]![4]! + rows[1]![4]!).toBeGreaterThan(0); // in/s
  });
});

describe('dlq', () => {
  test('list shows where dead letters came from; replay sends one back to its channel; purge needs --yes', async () => {
    const b = await broker({ requeueLimit: 1, channels: { 'jobs/v1': { deadLetter: 'dead/v1/jobs' } } });
    const [worker, producer] = await Promise.all([connect('worker', b.hostSpec), connect('producer', b.hostSpec)]);
    let failing = true;
    const got = new Inbox<unknown>();
    await worker.consume('jobs/v1/a', (_err, msg, done?: Done) => {
      got.push(msg);
      done!(!failing);
    }).ready;
    await producer.send('jobs/v1/a', { job: 1 });
    await producer.send('jobs/v1/a', { job: 2 });
    await until(() => b.router.queues.get('dead/v1')?.size === 2, 5000, 'two dead letters');

    const listed = await run(['dlq', 'list', ...socketOf(b)]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^DEAD-LETTER QUEUE +MESSAGES\ndead\/v1 +2\n/);
    expect(listed.stdout).toMatch(/MESSAGE ID +DEAD AT +FROM CHANNEL +SENDER +DELIVERIES +LAST ERROR\n/);
    expect(listed.stdout).toContain('jobs/v1/a');
    expect(listed.stdout).not.toContain('"job"');
    const json = JSON.parse((await run(['dlq', 'list', '--json', ...socketOf(b)])).stdout) as { messages: Array<{ messageId: string; original: { from: string; nbDeliveries: number } }> };
    expect(json.messages.map((m) => m.original.from)).toEqual(['producer', 'producer']);
    const [first, second] = json.messages.map((m) => m.messageId);

    failing = false;
    const replayed = await run(['dlq', 'replay', '-q', 'dead/v1', first!, ...socketOf(b)]);
    expect(replayed.code).toBe(0);
    expect(replayed.stdout).toMatch(new RegExp(`^replayed ${first} to jobs/v1/a as [0-9a-f]{32}$`, 'm'));
    await until(() => got.items.length === 3, 5000, 'the replayed message delivered');
    expect(got.items[2]).toEqual({ job: 1 });
    expect(b.router.queues.get('dead/v1')!.size).toBe(1);
    const again = await run(['dlq', 'replay', '-q', 'dead/v1', first!, ...socketOf(b)]);
    expect(again.code).toBe(1);
    expect(again.stdout).toContain('E_NOT_FOUND');

    expect((await run(['dlq', 'replay', '-q', 'jobs/v1', second!, ...socketOf(b)])).code).toBe(2); // not a dead-letter queue
    const unconfirmed = await run(['dlq', 'purge', '-q', 'dead/v1', '--all', ...socketOf(b)]);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toContain('--yes');
    expect(b.router.queues.get('dead/v1')!.size).toBe(1);
    const purged = await run(['dlq', 'purge', '-q', 'dead/v1', '--all', '--yes', ...socketOf(b)]);
    expect(purged.stdout).toBe('purged 1 dead letters from dead/v1\n');
    expect(b.router.queues.get('dead/v1')?.size ?? 0).toBe(0);
  });
});

describe('status and soft-stop', () => {
  test('a slave\'s status names its master: following, in step, its lag', async () => {
    const [pa, pb] = await Promise.all([freePort(), freePort()]);
    const start = (id: string, port: number, isMaster: boolean, peerId: string, peerPort: number) =>
      startBroker(brokerConfig({ serviceId: id, isMaster, peers: [`127.0.0.1:${peerPort}@${peerId}`], socketServer: { host: '127.0.0.1', port } }, tempDir()));
    const [master, slave] = await Promise.all([start('a', pa, true, 'b', pb), start('b', pb, false, 'a', pa)]);
    try {
      await until(() => slave.peers.status()[0]?.inStep === true, 10_000, 'the slave in step');
      const status = await run(['status', '--socket', slave.controlSocketPath!]);
      expect(status.stdout).toMatch(/^ {2}election +configured: isMaster: false in the config$/m);
      expect(status.stdout).toContain(`  peer          a (127.0.0.1:${pa}@a): following, in step, lag 0 (0.0 s)\n`);
      const onMaster = await run(['status', '--socket', master.controlSocketPath!]);
      expect(onMaster.stdout).toContain(`  peer          b (127.0.0.1:${pb}@b): slave\n`);
    } finally {
      await Promise.all([master.stop(), slave.stop()]);
    }
  });

  test('soft-stop says what is still in flight until it is done', async () => {
    const b = await broker();
    const [worker, producer] = await Promise.all([connect('worker', b.hostSpec), connect('producer', b.hostSpec)]);
    const held: Done[] = [];
    await worker.consume('jobs/v1/a', (_err, _msg, done) => void held.push(done!)).ready;
    await producer.send('jobs/v1/a', 1);
    await until(() => held.length === 1, 5000, 'a delivery');
    const stopping = start(['soft-stop', ...socketOf(b)]);
    await stopping.waitFor('stderr', /soft stop: 1 deliveries still in flight/);
    held[0]!();
    expect(await stopping.exited).toBe(0);
    expect(stopping.stdout()).toMatch(/^broker stopped \(soft: 1 deliveries were in flight, \d+ ms\)$/m);
  });

  test('shows store health and the election reason', async () => {
    const b = await broker();
    const status = await run(['status', ...socketOf(b)]);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^ {2}store +healthy$/m);
    expect(status.stdout).toMatch(/^ {2}election +configured: isMaster: true in the config$/m);
  });
});
