import '../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { describe, expect, test } from 'vitest';
import { broker, connect, Inbox, until } from '../support/harness.js';

/**
 * issue #29 item 4 (SPEC §2, §3): a message sent to `*` reaches every subscribed id, one copy
 * per id; `info.channel.id` stays `*` and `info.subscribedId` names the id each copy reached, so
 * the copies can be told apart, and the client's dedupe lets every copy through.
 */
describe('info.subscribedId', () => {
  test('one message to ep/ver/* reaches a listener on ids [123, 22, 33] as three copies, one per subscribed id', async () => {
    const b = await broker();
    const c = await connect('app', b.hostSpec);
    const inbox = new Inbox();
    const handle = c.listen({ endpoint: 'endpoint', version: 'v1', ids: [123, 22, 33] }, inbox.listener);
    await handle.ready;
    const { messageId } = await c.send('endpoint/v1/*', 'to all');
    const copies = await inbox.waitFor(3);
    expect(copies.map((r) => r.info.messageId)).toEqual([messageId, messageId, messageId]);
    expect(copies.map((r) => r.info.channel.id)).toEqual(['*', '*', '*']);
    expect(copies.map((r) => r.info.subscribedId).sort()).toEqual(['123', '22', '33']);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(inbox.length).toBe(3);
  });

  test('a consumer holding an id and * gets a message to that id twice, once through each; a message to another id once, through *', async () => {
    const b = await broker();
    const c = await connect('app', b.hostSpec);
    const inbox = new Inbox();
    const handle = c.consume({ endpoint: 'jobs', version: 'v1', ids: ['a/b', '*'] }, { prefetch: 10 }, inbox.consumer);
    await handle.ready;
    await c.send('jobs/v1/a%2Fb', 'one');
    await c.send('jobs/v1/other', 'two');
    await inbox.waitFor(3);
    const seen = inbox.items.map((r) => `${r.msg}|${r.info.channel.id}|${r.info.subscribedId}`).sort();
    expect(seen).toEqual(['one|a/b|*', 'one|a/b|a/b', 'two|other|*']);
    await until(() => b.router.queues.get('jobs/v1')?.inFlightCount === 0, 2000, 'every copy acked');
  });
});
