import { describe, expect, test } from 'vitest';
import { freePort, startProcess, whisker, writeConfig } from '../../support/broker-process.js';
import { connect, tempDir } from '../../support/harness.js';
import type { WhiskerError } from '../../../src/protocol/errors.js';

/**
 * Issue 28 item 3 (attacks-28 a4): a read right lost at a reload of both mirrors reaches the
 * handler once, with its details, though each broker sends its own `revoked` frame. Before the
 * fix the handler got the same E_FORBIDDEN twice (once per mirror).
 */
describe('a right lost at a reload of two mirrors (real broker processes)', () => {
  test('the handler is told once, with channel, right and reason', async () => {
    const ports = { a: await freePort(), b: await freePort() };
    const spec = (id: 'a' | 'b') => `127.0.0.1:${ports[id]}@${id}`;
    const rules = (read: string[]) => [{ client: '*', read, write: ['plain/*'] }];
    const dirs = { a: tempDir('whisker-revoked-once-a-'), b: tempDir('whisker-revoked-once-b-') };
    const config = (id: 'a' | 'b', read: string[]) =>
      writeConfig(dirs[id], { serviceId: id, isMaster: id === 'a', peers: [spec(id === 'a' ? 'b' : 'a')], socketServer: { host: '127.0.0.1', port: ports[id] }, rules: rules(read) });
    const a = await startProcess(config('a', ['plain/*', 'other/*']), { args: ['--no-watch'] });
    const b = await startProcess(config('b', ['plain/*', 'other/*']), { args: ['--no-watch'] });
    await b.waitFor(/in step with the master/);
    const client = await connect('revoked-once', [spec('a'), spec('b')]);
    const errors: WhiskerError[] = [];
    const handle = client.listen('plain/v1/p', (err) => void (err && errors.push(err)));
    await handle.ready;
    for (const id of ['a', 'b'] as const) {
      config(id, ['other/*']);
      expect((await whisker(['reload', '-c', `${dirs[id]}/config.json`])).code).toBe(0);
    }
    const start = Date.now();
    while (errors.length === 0 && Date.now() - start < 5000) await new Promise((resolve) => setTimeout(resolve, 50));
    await new Promise((resolve) => setTimeout(resolve, 1000)); // the second mirror's frame, if any
    expect(errors.map((e) => [e.code, e.details])).toEqual([['E_FORBIDDEN', { channel: 'plain/v1/p', right: 'read', reason: 'no-rule' }]]);
    expect(handle.ids).toEqual([]);
    await client.disconnect();
    a.child.kill('SIGKILL');
    b.child.kill('SIGKILL');
  }, 40_000);
});
