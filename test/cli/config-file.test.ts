import '../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { createServer, type Server } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { startProcess, whisker, writeConfig } from '../support/broker-process.js';
import { tempDir } from '../support/harness.js';

/**
 * Issue 29, items 2 and 6: the broker's file as Kitten-MQ migrants and newcomers write it
 * (SPEC §10, docs/configuration.md): comments and trailing commas, Kitten's `serverId`, every
 * problem of a file at once with a "did you mean", a port in use named by its key.
 */
const held: Server[] = [];
afterEach(async () => {
  await Promise.all(held.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** a port another process holds */
async function takenPort(): Promise<number> {
  const server = createServer();
  held.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

const write = (dir: string, text: string): string => {
  const path = join(dir, 'whisker.config.json');
  writeFileSync(path, text);
  return path;
};

describe('the file', () => {
  test('JSON with // and /* */ comments and trailing commas starts, and reloads the same way', async () => {
    const dir = tempDir();
    const path = write(dir, `{
  // where the broker keeps its data
  "dataDirectory": "data", "registeredClientsPath": "clients", "keysDirectory": "keys",
  /* the socket */
  "socketServer": { "port": 0, },
  "logLevel": "info", // trailing comma next
}
`);
    const broker = await startProcess(path);
    write(dir, `{
  "dataDirectory": "data", "registeredClientsPath": "clients", "keysDirectory": "keys",
  "socketServer": { "port": 0 },
  "requeueLimit": 3, // a live key
  "logLevel": "info",
}`);
    const reload = await whisker(['reload', '-c', path]);
    expect(reload.stderr).toBe('');
    expect(reload.code).toBe(0);
    expect((await whisker(['status', '-c', path])).code).toBe(0);
    broker.child.kill('SIGKILL');
  }, 30_000);

  test('Kitten keys that appear at a reload are warned about, by whisker reload and in the log of a watched save (outside check atk-kops)', async () => {
    const dir = tempDir();
    const path = write(dir, '{ "dataDirectory": "data", "registeredClientsPath": "clients", "keysDirectory": "keys", "socketServer": { "port": 0 } }');
    const broker = await startProcess(path);
    const kitten = `{
  "serverId": "mybroker-service-1", // Kitten's README name
  "dataDirectory": "data", "registeredClientsPath": "clients", "keysDirectory": "keys",
  "socketServer": { "port": 0 }, "logsDirectory": "/var/log/kitten",
}`;
    const from = broker.output().length;
    write(dir, kitten);
    // the watched save: the log names both (SPEC §10: "with a warning naming the new key")
    await broker.waitFor(/rename the key to \\"serviceId\\"/, from, 15_000);
    await broker.waitFor(/no meaning here, ignored: logsDirectory/, from, 15_000);
    const reload = await whisker(['reload', '-c', path]);
    expect(reload.code).toBe(0);
    expect(reload.stderr).toMatch(/whisker: warning: Kitten-MQ's "serverId" is used as this broker's "serviceId" \(mybroker-service-1\): rename the key to "serviceId"/);
    expect(reload.stderr).toMatch(/whisker: warning: Kitten-MQ config keys with no meaning here, ignored: logsDirectory/);
    broker.child.kill('SIGKILL');
  }, 45_000);

  test('a syntax error names its line and column', async () => {
    const dir = tempDir();
    const path = write(dir, '{\n  "logLevel": "info"\n  "socketServer": {}\n}\n');
    const result = await whisker(['start', '-c', path]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/not valid JSON: CommaExpected at line 3 column 3/);
  });

  test('the Kitten README\'s config pasted as a JavaScript object (unquoted keys, single quotes) says to quote them, with the line and column (outside check atk29)', async () => {
    const dir = tempDir();
    const path = write(dir, `{\n  // the broker\n  serverId : 'mybroker-service-1',\n  "isMaster": true,\n}\n`);
    const result = await whisker(['start', '-c', path]);
    expect(result.code).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    // the position of the first error stays; the hint names the key as it must be written
    expect(lines[0]).toMatch(/not valid JSON: InvalidSymbol at line 3 column 3/);
    expect(lines[0]).toContain('keys and strings need double quotes: write "serverId" at line 3 column 3, "mybroker-service-1" at line 3 column 14');
    const single = write(dir, `{ "serverId": 'mybroker-service-1' }`);
    const second = await whisker(['start', '-c', single]);
    expect(second.stderr).toContain('keys and strings need double quotes: write "mybroker-service-1" at line 1 column 15');
  });

  test('every problem of the file at once, each with its key, unknown keys with a "did you mean"', async () => {
    const dir = tempDir();
    const path = writeConfig(dir, { logLevl: 'debug', socketServer: { port: 0, hots: 'localhost' }, limits: { maxConections: 5, maxQueues: 0 }, channels: { 'orders/v1': { requeueLimt: 2 } }, frobnicate: true });
    const result = await whisker(['start', '-c', path]);
    console.log(`config problems: whisker start says:\n${result.stderr}`);
    expect(result.code).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines[0]).toBe('whisker: config: 6 problems:');
    expect(result.stderr).toContain('config key "logLevl": unknown key; did you mean "logLevel"?');
    expect(result.stderr).toContain('config key "socketServer.hots": unknown key; did you mean "socketServer.host"?');
    expect(result.stderr).toContain('config key "limits.maxConections": unknown key; did you mean "limits.maxConnections"?');
    expect(result.stderr).toContain('config key "limits.maxQueues": must be >= 1');
    expect(result.stderr).toContain('config key "channels.orders/v1.requeueLimt": unknown key; did you mean "channels.orders/v1.requeueLimit"?');
    expect(result.stderr).toMatch(/config key "frobnicate": unknown key\n/);
  });

  test('rules, channel maps, schemas and dead-letter channels are told in the same run as the keys (outside check atk29)', async () => {
    // a file with problems of every stage: the keys' schema, two rules, three channel formats, a
    // dead-letter channel. Before: only the schema's were told; fixed, the next run told the
    // first bad rule; fixed, the first bad map; and so on, one per run
    const bad = {
      logLevl: 'info',
      socketServer: { port: 0 },
      rules: [{ client: 'a', read: ['bad//x', 'ok/v1/*'] }, { client: 'b', write: ['x'] }],
      channels: {
        'a/v1': { map: { x: ['strin'] } },
        'b/v1': { map: { z: ['int'] } },
        'c/v1': { schema: { type: 'objet' } },
        'd/v1': { map: { y: ['numbr'] }, deadLetter: 'dead/v1/*' },
      },
    };
    const dir = tempDir();
    const path = writeConfig(dir, bad);
    const result = await whisker(['start', '-c', path]);
    expect(result.code).toBe(2);
    const expected = [
      'whisker: config: 7 problems:',
      '  config key "logLevl": unknown key; did you mean "logLevel"?',
      '  config key "rules.0.read.0": "bad//x": bad version',
      '  config key "rules.1.write.0": "x" must be "endpoint/version/id", "endpoint/version/*" or "endpoint/*"',
      expect.stringMatching(/^ {2}config key "channels.a\/v1.map.x": unknown type "strin"; did you mean "string"\? the first element must be one of int, /),
      expect.stringMatching(/^ {2}config key "channels.c\/v1.schema.type": invalid JSON Schema: /),
      expect.stringMatching(/^ {2}config key "channels.d\/v1.map.y": unknown type "numbr"; did you mean "number"\? /),
      expect.stringMatching(/^ {2}config key "channels.d\/v1.deadLetter": not a channel: cannot be \*$/),
    ];
    expect(result.stderr.trim().split('\n')).toEqual(expected);
    // a reload of a running broker refuses the same file with the same list
    const good = writeConfig(tempDir(), { dataDirectory: 'data', registeredClientsPath: 'clients', keysDirectory: 'keys', socketServer: { port: 0 } });
    const broker = await startProcess(good);
    writeFileSync(good, JSON.stringify({ ...bad, dataDirectory: 'data', registeredClientsPath: 'clients', keysDirectory: 'keys' }));
    const reload = await whisker(['reload', '-c', good]);
    expect(reload.code).toBe(2);
    for (const key of ['logLevl', 'rules.0.read.0', 'rules.1.write.0', 'channels.a/v1.map.x', 'channels.c/v1.schema.type', 'channels.d/v1.map.y', 'channels.d/v1.deadLetter']) {
      expect(reload.stderr).toContain(`config key "${key}"`);
    }
    broker.child.kill('SIGKILL');
  }, 30_000);

  test('Kitten\'s serverId is the broker\'s serviceId when serviceId is absent, with a warning naming the new key', async () => {
    const dir = tempDir();
    const path = writeConfig(dir, { serverId: 'mybroker-service-1', socketServer: { port: 0 } });
    const broker = await startProcess(path);
    expect(broker.hostSpec).toMatch(/@mybroker-service-1$/);
    expect(broker.output()).toContain('whisker: warning: Kitten-MQ\'s "serverId" is used as this broker\'s "serviceId" (mybroker-service-1): rename the key to "serviceId"');
    broker.child.kill('SIGKILL');
  }, 20_000);

  test('keysName written as a path (as in Kitten\'s README) is refused with one sentence saying what to write', async () => {
    const dir = tempDir();
    const path = writeConfig(dir, { keysName: '/var/www/kitten-mq/logs', socketServer: { port: 0 } });
    const result = await whisker(['start', '-c', path]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toEqual([
      'whisker: config key "keysName": "/var/www/kitten-mq/logs" is a path, but keysName is the key pair\'s file name: put the folder in "keysDirectory" and write only the name here, e.g. "keysName": "logs"',
    ]);
  });
});

describe('ports', () => {
  test.each([
    ['socketServer.port', (port: number) => ({ socketServer: { port } })],
    ['management.port', (port: number) => ({ socketServer: { port: 0 }, management: { port } })],
  ])('%s in use: exit 1 naming the key, and no role was claimed first', async (key, config) => {
    const port = await takenPort();
    const dir = tempDir();
    const path = writeConfig(dir, config(port));
    const result = await whisker(['start', '-c', path]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`whisker: config key "${key}": 127.0.0.1:${port} is in use by another process (EADDRINUSE)`);
    expect(result.stdout).not.toContain('acts as master');
    expect(result.stdout).not.toContain('broker started');
  }, 20_000);
});

describe('one port for both listeners (outside check atk-kops)', () => {
  test('management.port equal to socketServer.port is refused at start (exit 2), not blamed on "another process"', async () => {
    const dir = tempDir();
    const path = writeConfig(dir, { socketServer: { port: 27_871 }, management: { port: 27_871 } });
    const result = await whisker(['start', '-c', path]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('whisker: config key "management.port": 27871 is socketServer.port too: the management HTTP needs a port of its own');
    expect(result.stderr).not.toContain('another process');
    expect(result.stdout).not.toContain('broker started');
  }, 20_000);
});
