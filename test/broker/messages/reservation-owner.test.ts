import { describe, expect, test } from 'vitest';
import type { WhiskerClient } from '../../../src/client/client.js';
import type { ChannelString } from '../../../src/client/types.js';
import { createLogger } from '../../../src/runtime/logger.js';
import type { WhiskerError } from '../../../src/protocol/errors.js';
import { start } from '../../support/cli-process.js';
import { broker, brokerConfig, connect, freePort, Inbox, once, until } from '../../support/harness.js';

/**
 * SPEC §5: a reserved id belongs to the client NAME (issue 28 item 2), and refusals say why
 * (item 3). Restarts and failovers with real processes: test/broker/mirror/reservations.test.ts.
 */
const rules = [
  { client: '*', read: ['!room/v1/*', 'open/v1/*'], write: ['room/v1/*', 'open/v1/*'] },
  { client: 'reader', read: ['open/v1/*'] },
];

function refusals(): { errors: WhiskerError[]; handler: (err: WhiskerError | null) => void } {
  const errors: WhiskerError[] = [];
  return { errors, handler: (err) => void (err && errors.push(err)) };
}

/** `client` tries the id: refused with the reason `reserved`, and nothing in the error names the owner */
async function expectReserved(client: WhiskerClient, channel: ChannelString, ownerName: string): Promise<void> {
  const refused = refusals();
  await expect(client.listen(channel, refused.handler).ready).rejects.toMatchObject({ code: 'E_FORBIDDEN' });
  expect(refused.errors).toHaveLength(1);
  const error = refused.errors[0]!;
  expect(error.message).toBe('Not allowed');
  expect(error.details).toEqual({ channel, right: 'read', reason: 'reserved' });
  expect(JSON.stringify({ message: error.message, details: error.details, payload: error })).not.toContain(ownerName);
}

describe('a reservation belongs to the client name', () => {
  test('two instances of one name both subscribe to the reserved id and share its messages round-robin', async () => {
    const b = await broker({ rules });
    const [one, two, sender] = await Promise.all([connect('svc-owner', b.hostSpec), connect('svc-owner', b.hostSpec), connect('sender', b.hostSpec)]);
    const first = new Inbox();
    const second = new Inbox();
    await one.listen('room/v1/inv', first.listener).ready;
    await two.listen('room/v1/inv', second.listener).ready;
    for (let i = 0; i < 6; i++) await sender.send('room/v1/inv', { i });
    await until(() => first.length + second.length === 6);
    expect(first.length).toBe(3);
    expect(second.length).toBe(3);
    const seen = [...first.items, ...second.items].map((r) => (r.msg as { i: number }).i).sort();
    expect(seen).toEqual([0, 1, 2, 3, 4, 5]);
  });

  test('an instance that restarts gets the id back; a rolling deploy keeps it while another name is refused', async () => {
    const b = await broker({ rules });
    const intruder = await connect('intruder', b.hostSpec);
    const sender = await connect('sender', b.hostSpec);
    let instances = await Promise.all([connect('deployed', b.hostSpec), connect('deployed', b.hostSpec)]);
    for (const c of instances) await c.listen('room/v1/7', () => {}).ready;
    // each old instance in turn goes, the other name tries, the new one comes
    for (let step = 0; step < 2; step++) {
      await instances[step]!.disconnect();
      await expectReserved(intruder, 'room/v1/7', 'deployed');
      const fresh = await connect('deployed', b.hostSpec);
      await fresh.listen('room/v1/7', () => {}).ready;
      instances = step === 0 ? [fresh, instances[1]!] : [instances[0]!, fresh];
    }
    // both gone at once (a full restart): still the name's
    await Promise.all(instances.map((c) => c.disconnect()));
    await until(() => b.sessions.size === 2);
    await expectReserved(intruder, 'room/v1/7', 'deployed');
    const back = await connect('deployed', b.hostSpec);
    const inbox = new Inbox();
    await back.listen('room/v1/7', inbox.listener).ready;
    await sender.send('room/v1/7', 'for the owner');
    await inbox.waitFor(1);
  });

  test('the hold runs out reservationHold seconds after the last subscription; 0 releases at once', async () => {
    const b = await broker({ rules, reservationHold: 1 });
    const [owner, other] = await Promise.all([connect('holder', b.hostSpec), connect('other', b.hostSpec)]);
    const handle = owner.listen({ endpoint: 'room', version: 'v1', ids: ['a', 'b'] }, () => {});
    await handle.ready;
    await handle.removeId('a'); // the id removed: held too
    await expectReserved(other, 'room/v1/a', 'holder');
    await until(() => b.router.reservations.ownerOf('room/v1/a') === undefined, 3000, 'the hold to run out');
    await other.listen('room/v1/a', () => {}).ready;
    await expectReserved(owner, 'room/v1/a', 'other');

    const none = await broker({ rules, reservationHold: 0 });
    const [first, second] = await Promise.all([connect('holder', none.hostSpec), connect('other', none.hostSpec)]);
    await first.listen('room/v1/x', () => {}).ready;
    await first.disconnect();
    await until(() => none.sessions.size === 1);
    await second.listen('room/v1/x', () => {}).ready;
  });

  test('a reload of reservationHold moves the end of holds already running (the key is live)', async () => {
    const b = await broker({ rules, reservationHold: 600 });
    const [owner, other] = await Promise.all([connect('holder', b.hostSpec), connect('other', b.hostSpec)]);
    await owner.listen('room/v1/r', () => {}).ready;
    await owner.disconnect();
    await until(() => b.sessions.size === 1);
    await expectReserved(other, 'room/v1/r', 'holder');
    b.reload(brokerConfig({ rules, reservationHold: 0 }, b.dir)); // the hold began long enough ago
    await until(() => b.router.reservations.ownerOf('room/v1/r') === undefined, 3000, 'the hold to end with the new value');
    await other.listen('room/v1/r', () => {}).ready;
  });

  test('the reservation survives its queue being forgotten (idleQueueTimeout)', async () => {
    const b = await broker({ rules, idleQueueTimeout: 0.5 });
    const [owner, other] = await Promise.all([connect('keeper', b.hostSpec), connect('other', b.hostSpec)]);
    await owner.listen('room/v1/q', () => {}).ready;
    await owner.disconnect();
    await until(() => !b.router.queues.has('room/v1'), 5000, 'the idle queue to be forgotten');
    await expectReserved(other, 'room/v1/q', 'keeper');
  });

  test('limits.maxReservations bounds them: one more is E_LIMIT, the others are unaffected', async () => {
    const b = await broker({ rules, limits: { maxReservations: 2 } });
    const c = await connect('greedy', b.hostSpec);
    const refused = refusals();
    const handle = c.listen({ endpoint: 'room', version: 'v1', ids: ['1', '2', '3'] }, refused.handler);
    await handle.ready;
    expect(handle.ids).toEqual(['1', '2']);
    expect(refused.errors.map((e) => e.code)).toEqual(['E_LIMIT']);
    expect(b.router.reservations.size).toBe(2);
    // an id not reserved is not counted
    await c.listen('open/v1/3', () => {}).ready;
  });

  test('limits.maxReservationsPerClient: one name cannot take the whole pool; another name still reserves', async () => {
    const b = await broker({ rules, limits: { maxReservations: 10, maxReservationsPerClient: 3 } });
    const greedy = await connect('greedy', b.hostSpec);
    const refused = refusals();
    const handle = greedy.listen({ endpoint: 'room', version: 'v1', ids: ['1', '2', '3', '4', '5'] }, refused.handler);
    await handle.ready;
    expect(handle.ids).toEqual(['1', '2', '3']);
    expect(refused.errors.map((e) => [e.code, e.message])).toEqual([
      ['E_LIMIT', 'Too many reserved ids for this client name (limit 3)'],
      ['E_LIMIT', 'Too many reserved ids for this client name (limit 3)'],
    ]);
    const modest = await connect('modest', b.hostSpec);
    await modest.listen('room/v1/4', () => {}).ready;
    expect(b.router.reservations.size).toBe(4);
    // its own ids again (another instance of the name) are not new reservations
    const again = await connect('greedy', b.hostSpec);
    await again.listen('room/v1/2', () => {}).ready;
  });

  test("whisker reservations list shows owners, release frees one; whisker keys revoke releases the name's", async () => {
    const b = await broker({ rules });
    const [owner, other] = await Promise.all([connect('revokee', b.hostSpec), connect('other', b.hostSpec)]);
    await owner.listen({ endpoint: 'room', version: 'v1', ids: ['r', 's', 'a/b'] }, () => {}).ready;
    const socket = ['--socket', b.controlSocketPath!];
    const listed = start(['reservations', 'list', ...socket]);
    expect(await listed.exited, listed.stderr()).toBe(0);
    expect(listed.stdout()).toMatch(/room\/v1\/r\s+revokee\s+\S+\s+subscribed/);
    expect(listed.stdout()).toContain('room/v1/a%2Fb');
    const released = start(['reservations', 'release', 'room/v1/s', ...socket]);
    expect(await released.exited, released.stderr()).toBe(0);
    expect(released.stdout()).toContain('released room/v1/s (held by revokee)');
    const missing = start(['reservations', 'release', 'room/v1/s', ...socket]);
    expect(await missing.exited).toBe(1);
    const json = start(['reservations', 'list', '--json', ...socket]);
    expect(await json.exited).toBe(0);
    expect((JSON.parse(json.stdout()) as { reservations: Array<{ channel: string; owner: string }> }).reservations.map((r) => [r.channel, r.owner])).toEqual([
      ['room/v1/a%2Fb', 'revokee'],
      ['room/v1/r', 'revokee'],
    ]);
    const revoked = start(['keys', 'revoke', 'revokee', ...socket]);
    expect(await revoked.exited, revoked.stderr()).toBe(0);
    await other.listen({ endpoint: 'room', version: 'v1', ids: ['r', 'a/b'] }, () => {}).ready;
    expect(b.router.reservations.list().map((r) => r.owner)).toEqual(['other', 'other']);
  });
});

describe('refusals say why', () => {
  test('send without a write rule, listen without a read rule, * under !, and a reserved id: details with channel, right and reason', async () => {
    const b = await broker({ rules });
    const [reader, owner, other] = await Promise.all([connect('reader', b.hostSpec), connect('owner', b.hostSpec), connect('other', b.hostSpec)]);

    const sent = await reader.send('open/v2/1', 'no write rule').then(() => null, (error: WhiskerError) => error);
    expect(sent).toMatchObject({ code: 'E_FORBIDDEN', message: 'Not allowed', details: { channel: 'open/v2/1', right: 'write', reason: 'no-rule' } });
    // fire and forget: the `error` event carries the same details
    const event = once<WhiskerError>(reader, 'error');
    reader.publish('open/v2/2', 'no write rule either');
    expect(await event).toMatchObject({ code: 'E_FORBIDDEN', details: { channel: 'open/v2/2', right: 'write', reason: 'no-rule' } });

    const noRead = refusals();
    await expect(reader.listen('closed/v1/9', noRead.handler).ready).rejects.toMatchObject({ details: { channel: 'closed/v1/9', right: 'read', reason: 'no-rule' } });
    expect(noRead.errors[0]!.details).toEqual({ channel: 'closed/v1/9', right: 'read', reason: 'no-rule' });

    const star = refusals();
    await expect(other.listen('room/v1/*', star.handler).ready).rejects.toMatchObject({ details: { channel: 'room/v1/*', right: 'read', reason: 'star-under-reserve' } });
    expect(star.errors[0]!.details).toEqual({ channel: 'room/v1/*', right: 'read', reason: 'star-under-reserve' });

    await owner.listen('room/v1/mine', () => {}).ready;
    await expectReserved(other, 'room/v1/mine', 'owner');
  });

  test('the broker logs each refusal at info with the owner for reserved, once per name and channel a minute', async () => {
    const lines: string[] = [];
    const b = await broker({ rules }, { logger: createLogger('info', { write: (line) => lines.push(line) }) });
    const [owner, other] = await Promise.all([connect('owner', b.hostSpec), connect('other', b.hostSpec)]);
    await owner.listen('room/v1/logged', () => {}).ready;
    for (let i = 0; i < 3; i++) await expectReserved(other, 'room/v1/logged', 'owner');
    await other.send('open/v1/x', 'allowed').catch(() => undefined);
    const refused = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((l) => l.msg === 'refused');
    expect(refused()).toHaveLength(1);
    expect(refused()[0]).toMatchObject({ level: 'info', client: 'other', channel: 'room/v1/logged', right: 'read', reason: 'reserved', owner: 'owner' });
    await expectReserved(other, 'room/v1/logged', 'owner');
    const star = refusals();
    await other.listen('room/v1/*', star.handler).ready.catch(() => undefined);
    expect(refused()).toHaveLength(2);
    expect(refused()[1]).toMatchObject({ client: 'other', channel: 'room/v1/*', reason: 'star-under-reserve' });
    expect(refused()[1]).not.toHaveProperty('owner');
  });
});

/** subscriptions to room/v1/new the broker holds, over every connection */
function subscribedOn(b: { sessions: Iterable<{ subscriptions: ReadonlyMap<number, { queue: string; ids: ReadonlySet<string> }> }> }): number {
  let count = 0;
  for (const session of b.sessions) for (const s of session.subscriptions.values()) if (s.queue === 'room/v1' && s.ids.has('new')) count++;
  return count;
}

describe('a slave promoted to master decides from what it holds', () => {
  test('two names subscribed to one free reserved id on a slave: promoted, it keeps one and revokes the other with reason reserved', async () => {
    const unused = await freePort();
    const slave = await broker({ rules, isMaster: false, peers: [`127.0.0.1:${unused}@gone`] });
    const [first, second, sender] = await Promise.all([connect('first', slave.hostSpec), connect('second', slave.hostSpec), connect('sender', slave.hostSpec)]);
    const got = { first: new Inbox(), second: new Inbox() };
    const refused = { first: refusals(), second: refusals() };
    const handler = (name: 'first' | 'second') => (err: WhiskerError | null, msg?: unknown) => {
      if (err) refused[name].handler(err);
      else got[name].push({ msg, info: undefined as never });
    };
    first.listen('room/v1/new', handler('first'));
    await until(() => subscribedOn(slave) === 1, 5000, 'the first subscription on the slave');
    second.listen('room/v1/new', handler('second'));
    await until(() => subscribedOn(slave) === 2, 5000, 'the second subscription on the slave');
    expect(slave.router.reservations.size).toBe(0); // a slave takes nothing: its master decides
    slave.reload(brokerConfig({ rules, isMaster: true, peers: [] }, slave.dir));
    await until(() => refused.second.errors.length === 1, 5000, 'the second name to be revoked');
    expect(refused.second.errors[0]).toMatchObject({ code: 'E_FORBIDDEN', details: { channel: 'room/v1/new', right: 'read', reason: 'reserved' } });
    expect(refused.first.errors).toEqual([]);
    expect(slave.router.reservations.ownerOf('room/v1/new')).toBe('first');
    await sender.send('room/v1/new', 'after the promotion');
    await got.first.waitFor(1);
    expect(got.second.length).toBe(0);
  });
});
