import { describe, expect, test } from 'vitest';
import type { WhiskerError } from '../../src/protocol/errors.js';
import { broker, clientConfig, connect, unconnected, until } from '../support/harness.js';

/** The client's side of issue 19: replay(), listen({ since }), publish() (docs/client.md#replay). */
const config = { defaultPolicy: 'allow', channels: { 'ev/v1': { retention: { seconds: 3600 } }, 'plain/v1': {}, 'shaped/v1': { map: { n: ['int'] } } } };

describe('client replay', () => {
  test('replay() gives the history in order and resolves with the count; the callback form gets (null, count)', async () => {
    const b = await broker(config);
    const producer = await connect('producer', b.hostSpec);
    for (let n = 0; n < 20; n++) await producer.send(`ev/v1/${n % 2}`, { n });
    const reader = await connect('reader', b.hostSpec);
    const got: number[] = [];
    const count = await reader.replay('ev/v1/*', {}, (_err, msg) => void got.push((msg as { n: number }).n)).done;
    expect(count).toBe(20);
    expect(got).toEqual(Array.from({ length: 20 }, (_, n) => n));
    const odd: string[] = [];
    const viaCallback = await new Promise<number>((resolve, reject) =>
      reader.replay('ev/v1/1', { limit: 3 }, (_err, _msg, info) => void odd.push(info!.channel.id), (err, n) => (err ? reject(err) : resolve(n))),
    );
    expect(viaCallback).toBe(3);
    expect(odd).toEqual(['1', '1', '1']);
    await expect(reader.replay('plain/v1/*', {}, () => undefined).done).rejects.toMatchObject({ code: 'E_NO_HISTORY' });
    await Promise.all([producer.disconnect(), reader.disconnect()]);
  });

  test('listen({ since }) replays and goes on live: sends during the replay arrive once, none lost at the seam', async () => {
    const b = await broker(config);
    const producer = await connect('producer', b.hostSpec);
    for (let n = 0; n < 2_000; n += 200) await Promise.all(Array.from({ length: 200 }, (_, k) => producer.send('ev/v1/a', { n: n + k })));
    const reader = await connect('reader', b.hostSpec);
    const got: number[] = [];
    const handle = reader.listen('ev/v1/*', { since: 0 }, (_err, msg) => void got.push((msg as { n: number }).n));
    await handle.ready;
    // sent while the history is being replayed
    const live = Array.from({ length: 500 }, (_, k) => producer.send('ev/v1/a', { n: 2_000 + k }));
    await Promise.all(live);
    await until(() => got.length >= 2_500, 10_000, `all 2,500 (${got.length})`);
    await producer.send('ev/v1/a', { n: 2_500 });
    await until(() => got.includes(2_500), 5000, 'a live message after the seam');
    expect(got.length).toBe(2_501);
    expect(new Set(got).size).toBe(2_501);
    expect([...got].sort((x, y) => x - y)).toEqual(Array.from({ length: 2_501 }, (_, n) => n));
    await Promise.all([producer.disconnect(), reader.disconnect()]);
  });

  test('the stream form: for await gives the history in order and ends; done resolves with the count; a channel without history throws E_NO_HISTORY', async () => {
    const b = await broker(config);
    const producer = await connect('producer', b.hostSpec);
    for (let n = 0; n < 20; n++) await producer.send(`ev/v1/${n % 2}`, { n });
    const reader = await connect('reader', b.hostSpec);
    const stream = reader.replay<{ n: number }>('ev/v1/*', { since: 0 });
    const got: number[] = [];
    for await (const msg of stream) {
      got.push(msg.data.n);
      expect(msg.info.messageId).toMatch(/^[0-9a-f]{32}$/);
      msg.ack(); // nothing to ack: a replay never touches the queue
    }
    expect(got).toEqual(Array.from({ length: 20 }, (_, n) => n));
    expect(await stream.done).toBe(20);
    const ones: string[] = [];
    for await (const msg of reader.replay('ev/v1/1', { limit: 3 })) ones.push(msg.info.channel.id);
    expect(ones).toEqual(['1', '1', '1']);
    const refused = async () => {
      for await (const _ of reader.replay('plain/v1/*')) throw new Error('no message expected');
    };
    await expect(refused()).rejects.toMatchObject({ code: 'E_NO_HISTORY' });
    const badLimit = reader.replay('ev/v1/*', { limit: 0 });
    await expect(badLimit.next()).rejects.toMatchObject({ code: 'E_BAD_ARGUMENT' });
    await expect(badLimit.done).rejects.toMatchObject({ code: 'E_BAD_ARGUMENT' });
    await Promise.all([producer.disconnect(), reader.disconnect()]);
  });

  test('breaking out of a replay stream stops the replay on the broker: done resolves with the count so far', async () => {
    const b = await broker({ ...config, limits: { maxBufferedBytesPerConnection: 65_536 } });
    const producer = await connect('producer', b.hostSpec);
    const total = 5_000;
    const pad = 'x'.repeat(1_000);
    for (let n = 0; n < total; n += 500) await Promise.all(Array.from({ length: 500 }, (_, k) => producer.send('ev/v1/a', { n: n + k, pad })));
    const reader = await connect('reader', b.hostSpec);
    const stream = reader.replay<{ n: number }>('ev/v1/*', {});
    let seen = 0;
    for await (const _msg of stream) if (++seen === 10) break;
    const count = await stream.done;
    expect(count).toBeGreaterThanOrEqual(10);
    expect(count).toBeLessThan(total / 2);
    await until(() => b.history.replaying === 0, 5000, 'the replay stopped');
    expect(b.history.replayedMessages).toBe(count);
    // the connection replays again at once: the stopped one left its slot
    let again = 0;
    for await (const _msg of reader.replay('ev/v1/*', { limit: 100 })) again++;
    expect(again).toBe(100);
    await Promise.all([producer.disconnect(), reader.disconnect()]);
  });

  test('issue 27: a replay of ids the client may not read, or another name\'s reserved id, ends with E_FORBIDDEN in both forms; the callback gets (null, count)', async () => {
    const rules = [{ client: 'producer', write: ['ev/*'] }, { client: 'reader', read: ['ev/v1/open'] }, { client: 'owner', read: ['!ev/v1/*'] }, { client: 'other', read: ['ev/*'] }];
    const b = await broker({ ...config, defaultPolicy: 'deny', rules });
    const producer = await connect('producer', b.hostSpec);
    for (const id of ['open', 'closed', 'mine']) await producer.send(`ev/v1/${id}`, { id });
    const reader = await connect('reader', b.hostSpec);
    const errors: WhiskerError[] = [];
    reader.on('error', (error) => void errors.push(error));
    const loop = async (client: typeof reader, channel: `${string}/${string}/${string}`) => {
      const got: unknown[] = [];
      for await (const msg of client.replay(channel)) got.push(msg.data);
      return got;
    };
    await expect(loop(reader, 'ev/v1/closed')).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
    await expect(reader.replay('ev/v1/closed', {}, () => undefined).done).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
    expect(await loop(reader, 'ev/v1/open')).toEqual([{ id: 'open' }]);
    // cb(null, count), as documented: null, not undefined
    const args = await new Promise<unknown[]>((resolve) => reader.replay('ev/v1/open', {}, () => undefined, (...a) => resolve(a)));
    expect(args).toEqual([null, 1]);
    expect(args[0]).toBeNull();
    // a reserved id held by another name: refused to `other` in the stream form too
    const owner = await connect('owner', b.hostSpec);
    await owner.listen('ev/v1/mine', () => undefined).ready;
    const other = await connect('other', b.hostSpec);
    await expect(loop(other, 'ev/v1/mine')).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
    expect(await loop(other, 'ev/v1/open')).toEqual([{ id: 'open' }]);
    // a channel the client may not read says nothing about its history: E_FORBIDDEN, never E_NO_HISTORY
    await expect(loop(reader, 'plain/v1/x')).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
    await expect(loop(other, 'plain/v1/x')).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
    // the stream threw the refusal: it did not also go to the error event
    expect(errors).toEqual([]);
    await Promise.all([producer.disconnect(), reader.disconnect(), owner.disconnect(), other.disconnect()]);
  });

  test('issue 27: listen({ since }) while 15,000 retained messages still wait for a first subscriber: each arrives once', async () => {
    const b = await broker({ ...config, maxItemsInQueue: 50_000 });
    const producer = await connect('producer', b.hostSpec);
    const total = 15_000;
    for (let n = 0; n < total; n += 500) await Promise.all(Array.from({ length: 500 }, (_, k) => producer.send('ev/v1/a', { n: n + k })));
    expect(b.router.queues.get('ev/v1')?.size).toBe(total); // nobody took them yet
    const reader = await connect('reader', b.hostSpec);
    const got: number[] = [];
    await reader.listen('ev/v1/*', { since: 0 }, (_err, msg) => void got.push((msg as { n: number }).n)).ready;
    await until(() => got.length >= total, 30_000, `all ${total} (${got.length})`);
    await producer.send('ev/v1/a', { n: total });
    await until(() => got.includes(total), 10_000, 'a live message after the seam');
    await new Promise((resolve) => setTimeout(resolve, 300)); // late copies, if any, would come now
    const duplicates = got.length - new Set(got).size;
    console.log(`listen since over a waiting backlog of ${total}: ${got.length} received, ${duplicates} duplicates`);
    expect(duplicates).toBe(0);
    expect([...got].sort((x, y) => x - y)).toEqual(Array.from({ length: total + 1 }, (_, n) => n));
    await Promise.all([producer.disconnect(), reader.disconnect()]);
  }, 90_000);

  test('publish() returns at once; a refused one reaches the error event with its code and message id', async () => {
    const b = await broker(config);
    const producer = await connect('producer', b.hostSpec);
    const errors: WhiskerError[] = [];
    producer.on('error', (error) => void errors.push(error));
    expect(producer.publish('shaped/v1/x', { n: 1 })).toBeUndefined();
    producer.publish('shaped/v1/x', { n: 'not a number' });
    await until(() => errors.length === 1 && b.router.queues.get('shaped/v1')?.size === 1, 5000, 'one stored, one refused');
    expect(errors[0]!.code).toBe('E_SCHEMA');
    expect((errors[0] as WhiskerError & { info: { messageId: string } }).info.messageId).toMatch(/./);
    await producer.disconnect();
  });
  test('a replay asked right after connect(), before a broker is up, waits for it (SPEC §3) instead of failing E_NO_MASTER', async () => {
    // found by the atk-kclient check: Kitten style `mq.connect(config); mq.replay(...)` failed at once with E_NO_MASTER
    const b = await broker(config);
    const producer = await connect('producer', b.hostSpec);
    for (let n = 0; n < 3; n++) await producer.send('ev/v1/a', { n });
    const reader = unconnected();
    const connected = reader.connect(clientConfig('reader', b.hostSpec));
    const got: number[] = [];
    const done = reader.replay('ev/v1/*', {}, (_err, msg) => void got.push((msg as { n: number }).n)).done;
    await expect(done).resolves.toBe(3);
    expect(got).toEqual([0, 1, 2]);
    await connected;
    // and one to a host that never answers ends with E_DISCONNECTED at disconnect(), not later
    const lonely = unconnected();
    lonely.on('error', () => {});
    void lonely.connect(clientConfig('lonely', '127.0.0.1:1@whisker', { connectTimeout: 200 })).catch(() => {});
    const waiting = lonely.replay('ev/v1/*', {}, () => {}).done;
    await lonely.disconnect();
    await expect(waiting).rejects.toMatchObject({ code: 'E_DISCONNECTED' });
    await Promise.all([producer.disconnect(), reader.disconnect()]);
  });
});
