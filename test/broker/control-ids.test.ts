import '../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { describe, expect, test } from 'vitest';
import { startBroker } from '../../src/server/start.js';
import type { WhiskerError } from '../../src/protocol/errors.js';
import type { ChannelString } from '../../src/client/types.js';
import { broker, brokerConfig, connect, freePort, Inbox, tempDir, until } from '../support/harness.js';
import { newKeyPair, RawPeer } from '../support/raw-peer.js';

/**
 * issue #29 item 11 (SPEC §2): ids with raw control characters (C0, DEL, C1) or bidirectional
 * controls are refused with E_BAD_CHANNEL, by the client and by the broker (a client that is
 * not ours); a message stored with such an id before still loads at restart and is delivered.
 */
const BAD = ['a\u001b[31mb', 'line\nbreak', 'del\u007f', 'c1\u0085', 'rlo\u202Etxt.exe', 'lri\u2066x', 'lrm\u200E'];

describe('control characters in ids', () => {
  test('the client refuses them in send, listen and addId with E_BAD_CHANNEL, sending nothing', async () => {
    const b = await broker();
    const c = await connect('app', b.hostSpec);
    for (const id of BAD) {
      await expect(c.send(`t/v1/${encodeURIComponent(id)}` as ChannelString, 1), JSON.stringify(id)).rejects.toMatchObject({ code: 'E_BAD_CHANNEL' });
      await expect(c.send(`t/v1/${id}` as ChannelString, 1), JSON.stringify(id)).rejects.toMatchObject({ code: 'E_BAD_CHANNEL' });
      const handle = c.listen({ endpoint: 't', version: 'v1', ids: [id] }, () => {});
      await expect(handle.ready).rejects.toMatchObject({ code: 'E_BAD_CHANNEL' });
      const ok = c.listen({ endpoint: 't', version: 'v1', ids: ['fine'] }, () => {});
      await expect(ok.addId(id)).rejects.toMatchObject({ code: 'E_BAD_CHANNEL' });
      await ok.close();
    }
    await c.send('t/v1/caf%C3%A9%20ok', 1); // other characters (spaces, accents) are fine
    expect(b.router.queues.get('t/v1')?.size).toBe(1);
  });

  test('the broker refuses them from any client: publish, subscribe and addIds answer E_BAD_CHANNEL', async () => {
    const b = await broker();
    const peer = await RawPeer.open(b.port);
    await peer.login('raw', newKeyPair());
    for (const [n, id] of BAD.entries()) {
      const messageId = `m${n}`;
      peer.sendJson({ type: 'publish', messages: [{ messageId, channel: `t/v1/${encodeURIComponent(id)}`, data: 1, created: 1 }] });
      const results = await peer.next('results', (f) => f.results.some((r) => r.messageId === messageId));
      expect(results.results.find((r) => r.messageId === messageId)?.error?.code).toBe('E_BAD_CHANNEL');
      peer.sendJson({ type: 'subscribe', req: 10 + n, sub: 10 + n, mode: 'listen', endpoint: 't', version: 'v1', ids: [id] });
      expect((await peer.next('reply', (f) => f.req === 10 + n)).error?.code).toBe('E_BAD_CHANNEL');
    }
    peer.sendJson({ type: 'subscribe', req: 1, sub: 1, mode: 'listen', endpoint: 't', version: 'v1', ids: ['ok'] });
    await peer.next('reply', (f) => f.req === 1);
    peer.sendJson({ type: 'addIds', req: 2, sub: 1, ids: ['x\u0000'] });
    expect((await peer.next('reply', (f) => f.req === 2)).error?.code).toBe('E_BAD_CHANNEL');
    expect(b.router.queues.get('t/v1')?.size ?? 0).toBe(0);
  });

  test('the broker refuses them in replay too, on a retained channel, before looking at history', async () => {
    const b = await broker({ channels: { 't/v1': { retention: { seconds: 60, maxBytes: 1_000_000 } } } });
    const peer = await RawPeer.open(b.port);
    await peer.login('raw', newKeyPair());
    for (const [n, id] of [...BAD, 'c1\u009f', 'nul\u0000', 'alm\u061c'].entries()) {
      peer.sendJson({ type: 'replay', req: 100 + n, sub: 100 + n, endpoint: 't', version: 'v1', ids: [id], since: 0 });
      expect((await peer.next('reply', (f) => f.req === 100 + n)).error?.code, JSON.stringify(id)).toBe('E_BAD_CHANNEL');
    }
  });

  test('a message stored with such an id before still loads at restart and reaches a listener on *', async () => {
    const port = await freePort();
    const dir = tempDir();
    const first = await startBroker(brokerConfig({ socketServer: { port } }, dir));
    const id = 'old\u001bid';
    // as an older version stored it: through the router, past today's intake check
    await first.router.store([{ seq: first.router.nextSeq(), messageId: 'f'.repeat(32), queue: 't/v1', id, data: 'kept', created: 1, acceptedAt: Date.now(), from: 'old-app' }], false);
    await first.stop();
    const second = await startBroker(brokerConfig({ socketServer: { port } }, dir));
    try {
      expect(second.router.queues.get('t/v1')?.size).toBe(1);
      const c = await connect('app', `127.0.0.1:${port}@whisker`);
      const inbox = new Inbox();
      const errors: WhiskerError[] = [];
      c.on('error', (e) => errors.push(e));
      await c.listen('t/v1/*', inbox.listener).ready;
      const [got] = await inbox.waitFor(1);
      expect(got!.msg).toBe('kept');
      expect(got!.info.channel.id).toBe(id);
      await until(() => second.router.queues.get('t/v1')?.size === 0, 2000, 'acked');
      expect(errors).toEqual([]);
      await c.disconnect();
    } finally {
      await second.stop();
    }
  });
});
