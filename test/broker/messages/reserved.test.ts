import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { brokerConfig, broker, clientConfig, connect, Inbox, once, unconnected, until } from '../../support/harness.js';
import type { WhiskerError } from '../../../src/protocol/errors.js';

/** SPEC §5: reserved ids (`!` read patterns), and what a reload does to rights and keys. */
const rules = [
  { client: '*', read: ['!room/v1/*', 'open/v1/*', '!lobby/*'], write: ['room/v1/*', 'open/v1/*', 'lobby/*'] },
  // a plain read pattern: the only way to listen on room/v1/*
  { client: 'watcher', read: ['room/v1/*'] },
];

function refusals(): { errors: WhiskerError[]; handler: (err: WhiskerError | null) => void } {
  const errors: WhiskerError[] = [];
  return { errors, handler: (err) => void (err && errors.push(err)) };
}

describe('reserved ids', () => {
  test('the first subscriber owns the id; another client is refused with E_FORBIDDEN', async () => {
    const b = await broker({ rules });
    const [owner, other] = await Promise.all([connect('owner', b.hostSpec), connect('other', b.hostSpec)]);
    const inbox = new Inbox();
    await owner.listen('room/v1/42', inbox.listener).ready;
    const refused = refusals();
    const handle = other.listen('room/v1/42', refused.handler);
    // wholly refused: ready rejects with the code (#16 fault 4), and the handler got it too
    await expect(handle.ready).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
    expect(refused.errors.map((e) => e.code)).toEqual(['E_FORBIDDEN']);
    expect(handle.ids).toEqual([]);
    await other.send('room/v1/42', 'hi owner');
    await inbox.waitFor(1);
  });

  test('another instance of the same name and another handler of the same connection may subscribe (the id is the name\'s)', async () => {
    const b = await broker({ rules });
    const [first, second] = await Promise.all([connect('svc', b.hostSpec), connect('svc', b.hostSpec)]);
    await first.consume('room/v1/1', () => {}).ready;
    const sameName = refusals();
    await second.consume('room/v1/1', sameName.handler).ready;
    const sameConnection = refusals();
    await first.listen('room/v1/1', sameConnection.handler).ready;
    expect(sameName.errors).toEqual([]);
    expect(sameConnection.errors).toEqual([]);
  });

  test('!ep/* reserves every version and id of the endpoint', async () => {
    const b = await broker({ rules });
    const [a, c] = await Promise.all([connect('a', b.hostSpec), connect('c', b.hostSpec)]);
    await a.listen('lobby/v9/x', () => {}).ready;
    const refused = refusals();
    await expect(c.listen('lobby/v9/x', refused.handler).ready).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
    expect(refused.errors.map((e) => e.code)).toEqual(['E_FORBIDDEN']);
  });

  test('with reservationHold 0, the owner can remove its id, and then another client can take it', async () => {
    const b = await broker({ rules, reservationHold: 0 });
    const [owner, next] = await Promise.all([connect('owner', b.hostSpec), connect('next', b.hostSpec)]);
    const handle = owner.listen({ endpoint: 'room', version: 'v1', ids: ['1', '2'] }, () => {});
    await handle.ready;
    await handle.removeId('1');
    const refused = refusals();
    await next.listen('room/v1/1', refused.handler).ready;
    expect(refused.errors).toEqual([]);
  });

  test('with reservationHold 0, a closed connection releases its ids at once', async () => {
    const b = await broker({ rules, reservationHold: 0 });
    const [owner, next] = await Promise.all([connect('owner', b.hostSpec), connect('next', b.hostSpec)]);
    await owner.listen('room/v1/7', () => {}).ready;
    await owner.disconnect();
    await until(() => b.sessions.size === 1);
    const refused = refusals();
    await next.listen('room/v1/7', refused.handler).ready;
    expect(refused.errors).toEqual([]);
  });

  test('a client whose read right comes only from ! patterns cannot listen or consume on * (Kitten-MQ README)', async () => {
    const b = await broker({ rules });
    const [owner, snoop] = await Promise.all([connect('owner', b.hostSpec), connect('snoop', b.hostSpec)]);
    const inbox = new Inbox();
    await owner.listen('room/v1/42', inbox.listener).ready;
    const listened = refusals();
    const listenHandle = snoop.listen('room/v1/*', listened.handler);
    await expect(listenHandle.ready).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
    const consumed = refusals();
    const consumeHandle = snoop.consume({ endpoint: 'lobby', version: 'v1', ids: ['*'] }, consumed.handler);
    await expect(consumeHandle.ready).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
    expect(listened.errors.map((e) => e.code)).toEqual(['E_FORBIDDEN']);
    expect(consumed.errors.map((e) => e.code)).toEqual(['E_FORBIDDEN']);
    expect(listenHandle.ids).toEqual([]);
    // the reserved id's message reaches its owner only
    await snoop.send('room/v1/42', 'private');
    await inbox.waitFor(1);
    const snooped = new Inbox();
    await snoop.listen('open/v1/*', snooped.listener).ready; // a plain pattern still allows *
    await snoop.send('open/v1/1', 'public');
    await snooped.waitFor(1);
    expect(listened.errors).toHaveLength(1);
  });

  test('a * subscription neither takes nor is blocked by reserved ids', async () => {
    const b = await broker({ rules });
    const [owner, watcher, late] = await Promise.all([connect('owner', b.hostSpec), connect('watcher', b.hostSpec), connect('late', b.hostSpec)]);
    await owner.listen('room/v1/5', () => {}).ready;
    const refused = refusals();
    await watcher.listen('room/v1/*', refused.handler).ready;
    const lateRefused = refusals();
    await late.listen('room/v1/6', lateRefused.handler).ready;
    expect(refused.errors).toEqual([]);
    expect(lateRefused.errors).toEqual([]);
  });

  test('a multi-id subscription is checked id by id', async () => {
    const b = await broker({ rules });
    const [owner, other] = await Promise.all([connect('owner', b.hostSpec), connect('other', b.hostSpec)]);
    await owner.listen('room/v1/taken', () => {}).ready;
    const refused = refusals();
    const handle = other.listen({ endpoint: 'room', version: 'v1', ids: ['free', 'taken'] }, refused.handler);
    await handle.ready;
    expect(handle.ids).toEqual(['free']);
    expect(refused.errors.map((e) => e.code)).toEqual(['E_FORBIDDEN']);
  });

  test('two clients racing for one reserved id: exactly one wins', async () => {
    const b = await broker({ rules });
    const clients = await Promise.all(Array.from({ length: 6 }, (_, i) => connect(`racer${i}`, b.hostSpec)));
    const outcomes = await Promise.all(
      clients.map(async (c) => {
        const refused = refusals();
        const won = await c.consume('room/v1/prize', refused.handler).ready.then(() => true, () => false);
        expect(won).toBe(refused.errors.length === 0);
        return won;
      }),
    );
    expect(outcomes.filter(Boolean)).toHaveLength(1);
  });
});

describe('reload', () => {
  test('subscriptions no longer allowed are removed and their handler gets E_FORBIDDEN', async () => {
    const b = await broker({ rules: [{ client: '*', read: ['open/v1/*'], write: ['open/v1/*'] }] });
    const [c, p] = await Promise.all([connect('reader', b.hostSpec), connect('writer', b.hostSpec)]);
    const refused = refusals();
    const handle = c.listen('open/v1/1', refused.handler);
    await handle.ready;
    b.reload(brokerConfig({ rules: [{ client: 'writer', read: ['open/v1/*'], write: ['open/v1/*'] }] }, b.dir));
    await until(() => refused.errors.length === 1);
    expect(refused.errors[0]!.code).toBe('E_FORBIDDEN');
    expect(handle.ids).toEqual([]);
    await p.send('open/v1/1', 'nobody hears this');
    expect(b.router.queues.get('open/v1')!.depth).toBe(1);
  });

  test("a removed key closes that name's connections and the old key never verifies again", async () => {
    const b = await broker();
    const c = await connect('revoked', b.hostSpec, { reconnect: { initialMs: 20, maxMs: 50 } });
    const errors: string[] = [];
    c.on('error', (err: WhiskerError) => errors.push(err.code));
    rmSync(join(b.config.registeredClientsPath, 'revoked.pub'));
    const lost = once(c, 'disconnect');
    b.reload(brokerConfig({}, b.dir)); // auto-registration stays on: the old key must still fail
    await lost;
    await until(() => errors.includes('E_AUTH'), 5000, 'the revocation told');
    // the old key never verifies again: a new client with it is refused (reason revoked, SPEC §4)
    const again = await unconnected().connect(clientConfig('revoked', b.hostSpec)).then(() => null, (e: WhiskerError) => e);
    expect(again).toMatchObject({ code: 'E_AUTH', details: { reason: 'revoked' } });
    // and the first client does not redial a broker that revoked its key (reconnect.authRetryMs)
    expect(errors.filter((e) => e === 'E_AUTH')).toHaveLength(1);
    expect(c.isConnected()).toBe(false);
  });
});
