import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { startProcess, whisker, writeConfig } from '../support/broker-process.js';
import { broker as inProcess, brokerConfig, connect, tempDir } from '../support/harness.js';

/**
 * Reload of a real `whisker start` process, by each of its three paths (SPEC §10,
 * docs/operations.md#reload): each changes what a client sees, and a bad file changes nothing.
 */
const shop = (type: string) => ({ 'shop/v1': { map: { price: [type] } } });

describe('reload', () => {
  test('an edit of the file, even saved by rename as editors do, applies to the next send', async () => {
    const dir = tempDir();
    const base = { serviceId: 'reload-file', socketServer: { port: 0 } };
    const path = writeConfig(dir, { ...base, rules: [{ client: 'producer', write: ['a/v1/*'] }] });
    const broker = await startProcess(path);
    const producer = await connect('producer', broker.hostSpec);
    await expect(producer.send('b/v1/x', { n: 1 })).rejects.toMatchObject({ code: 'E_FORBIDDEN' });

    const mark = broker.output().length;
    const draft = join(dir, '.config.json.swp');
    writeFileSync(draft, JSON.stringify({ ...base, dataDirectory: 'data', registeredClientsPath: 'clients', keysDirectory: 'keys', rules: [{ client: 'producer', write: ['a/v1/*', 'b/v1/*'] }] }));
    renameSync(draft, path);
    await broker.waitFor(/"msg":"config reloaded"/, mark);
    await expect(producer.send('b/v1/x', { n: 2 })).resolves.toMatchObject({ messageId: expect.any(String) });
  });

  test('whisker reload swaps a channel map and names the keys that need a restart', async () => {
    const dir = tempDir();
    const base = { serviceId: 'reload-cmd', socketServer: { port: 0 } };
    const path = writeConfig(dir, { ...base, channels: shop('int') });
    const broker = await startProcess(path, { args: ['--no-watch'] });
    const producer = await connect('producer', broker.hostSpec);
    await expect(producer.send('shop/v1/1', { price: 'cheap' })).rejects.toMatchObject({ code: 'E_SCHEMA' });

    writeConfig(dir, { ...base, socketServer: { port: 1 }, limits: { maxPayloadBytes: 4096 }, channels: shop('string') });
    const reload = await whisker(['reload', '-c', path]);
    expect(reload.stderr).toBe('');
    expect(reload.code).toBe(0);
    expect(reload.stdout).toContain('config reloaded');
    expect(reload.stdout).toMatch(/restart: .*socketServer\.port/);
    expect(reload.stdout).toContain('limits.maxPayloadBytes');
    await expect(producer.send('shop/v1/1', { price: 'cheap' })).resolves.toMatchObject({ messageId: expect.any(String) });
    // the port stays: the connection above kept working, and a new one still gets in
    await connect('producer-2', broker.hostSpec);
  });

  test('SIGHUP applies queue limits and the log level', async () => {
    const dir = tempDir();
    const base = { serviceId: 'reload-hup', socketServer: { port: 0 } };
    const path = writeConfig(dir, base);
    const broker = await startProcess(path, { args: ['--no-watch'] });
    const producer = await connect('producer', broker.hostSpec);
    await producer.send('jobs/v1/1', { n: 1 });
    await producer.send('jobs/v1/1', { n: 2 });

    writeConfig(dir, { ...base, logLevel: 'debug', channels: { 'jobs/v1': { maxItemsInQueue: 2, overflow: 'reject' } } });
    const mark = broker.output().length;
    broker.child.kill('SIGHUP');
    await broker.waitFor(/whisker: SIGHUP, config reloaded/, mark);
    await expect(producer.send('jobs/v1/1', { n: 3 })).rejects.toMatchObject({ code: 'E_QUEUE_FULL' });
    await connect('late', broker.hostSpec);
    await broker.waitFor(/"level":"debug"[^\n]*"msg":"client connected"/, mark);
  });

  test('an invalid file is refused, counted, reported by whisker reload, and the old config keeps serving', async () => {
    const dir = tempDir();
    const base = { serviceId: 'reload-bad', socketServer: { port: 0 } };
    const path = writeConfig(dir, { ...base, rules: [{ client: 'producer', write: ['a/v1/*'] }] });
    const broker = await startProcess(path);
    const producer = await connect('producer', broker.hostSpec);

    // a bad value and rules that would forbid the send below: nothing of it may apply
    const mark = broker.output().length;
    writeConfig(dir, { ...base, requeueLimit: 'five', rules: [{ client: 'producer', write: ['z/v1/*'] }] });
    await broker.waitFor(/"key":"requeueLimit"[^\n]*"msg":"config refused, the running one stays"/, mark);
    await expect(producer.send('a/v1/x', { n: 1 })).resolves.toMatchObject({ messageId: expect.any(String) });

    const reload = await whisker(['reload', '-c', path]);
    expect(reload.code).toBe(2);
    expect(reload.stderr).toContain('requeueLimit');
    expect(reload.stderr).toContain('the running one stays');
    await expect(producer.send('a/v1/x', { n: 2 })).resolves.toMatchObject({ messageId: expect.any(String) });

    const status = await whisker(['status', '--json', '-c', path]);
    expect(JSON.parse(status.stdout)).toMatchObject({ reloadFailures: 2, lastReloadError: expect.stringContaining('requeueLimit') });

    // half-saved: not JSON any more, but the data directory (where the socket is) still reads
    writeFileSync(path, '{ "dataDirectory": "data", "serviceId": ');
    const notJson = await whisker(['reload', '-c', path]);
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toContain('not valid JSON');
  });
});

describe('reload(config) in process', () => {
  test('restart-only keys keep their running value and are named; the rest applies', async () => {
    const b = await inProcess({ serviceId: 'rk', limits: { maxPayloadBytes: 65_536 } });
    const next = brokerConfig({ serviceId: 'rk2', dataDirectory: 'elsewhere', socketServer: { port: 9, token: 'new' }, management: { port: 0 }, limits: { maxPayloadBytes: 4096, maxConnections: 5 } }, b.dir);
    expect(b.reload(next).restartNeeded).toEqual(['socketServer.port', 'dataDirectory', 'management', 'limits.maxPayloadBytes']);
    expect(b.config).toMatchObject({ serviceId: 'rk2', socketServer: { port: 0, token: 'new' }, limits: { maxPayloadBytes: 65_536, maxConnections: 5 } });
    expect(b.config.dataDirectory).toBe(join(b.dir, 'whisker-data'));
    expect(b.config.management).toBeUndefined();
    expect(Object.isFrozen(b.config.limits)).toBe(true);
    // the new serviceId and socket token are what a new handshake needs
    const c = await connect('rk-client', `127.0.0.1:${b.port}@rk2#new`);
    expect(c.isConnected()).toBe(true);
  });
});

