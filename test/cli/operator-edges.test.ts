import '../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { bin, freePort, startProcess, whisker, writeConfig } from '../support/broker-process.js';
import { tempDir } from '../support/harness.js';
import { newKeyPair, RawPeer } from '../support/raw-peer.js';

/**
 * Issue 18, items 5 and 6: what reaches an operator's terminal is escaped, and the CLI's edges
 * (a truncated config, a closed pipe) say what happened; the dashboard's icon is no 404.
 */
// a title change, a colour, a carriage return that overwrites a row, a bidi override, a newline
const HOSTILE = ['\u001b]0;pwned\u0007', '\u001b[31mred', 'ok\rFAKE ROW', 'abc\u202Edcba', 'two\nlines', '\u009b2J'];
// eslint-disable-next-line no-control-regex -- looking for raw control characters is the test
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('terminal output', () => {
  test('every verb that prints client-chosen text escapes control characters (list, list -q, list -m, --json, delete, status)', async () => {
    const dir = tempDir();
    const path = writeConfig(dir, { socketServer: { port: 0 } });
    const broker = await startProcess(path);
    const peer = await RawPeer.open(Number(new URL(broker.url).port));
    await peer.login('planter', newKeyPair());
    // ids with control characters are refused (SPEC §2): the hostile text rides in message ids
    const refusedIds = HOSTILE.map((id, i) => ({ messageId: `x${i}`, channel: `evil/v1/${encodeURIComponent(id)}`, data: { i }, created: 1 }));
    const messages = HOSTILE.map((id, i) => ({ messageId: `m${i}${id}`, channel: `evil/v1/id${i}`, data: { i }, created: 1 }));
    peer.sendJson({ type: 'publish', messages: [...refusedIds, ...messages] });
    const { results } = await peer.next('results');
    const codes = new Map(results.map((r) => [r.messageId, r.error?.code]));
    expect(refusedIds.map((m) => codes.get(m.messageId))).toEqual(HOSTILE.map(() => 'E_BAD_CHANNEL'));
    expect(messages.map((m) => codes.get(m.messageId))).toEqual(HOSTILE.map(() => undefined));
    const runs: Array<[string, string[]]> = [
      ['list', ['list', '-c', path]],
      ['list -q', ['list', '-q', 'evil/v1', '-c', path]],
      ['list -q -m', ['list', '-q', 'evil/v1', '-m', '-c', path]],
      ['list -i', ['list', '-q', 'evil/v1', '-i', 'id0', '-c', path]],
      ['list --json', ['list', '-q', 'evil/v1', '-m', '--json', '-c', path]],
      ['status', ['status', '-c', path]],
      ['delete', ['delete', '-q', 'evil/v1', '-i', 'id1', '--yes', '-c', path]],
    ];
    for (const [verb, args] of runs) {
      const result = await whisker(args);
      expect(result.code, `${verb}: ${result.stderr}`).toBe(0);
      expect(RAW_CONTROL.test(result.stdout), `${verb} printed a raw control character: ${JSON.stringify(result.stdout)}`).toBe(false);
      expect(RAW_CONTROL.test(result.stderr), verb).toBe(false);
      if (verb === 'list --json') expect(JSON.parse(result.stdout)).toMatchObject({ queues: [{ queue: 'evil/v1' }] });
    }
    const table = (await whisker(['list', '-q', 'evil/v1', '-m', '-c', path])).stdout;
    console.log(`terminal output: whisker list -q evil/v1 -m prints\n${table}`);
    expect(table).toContain('\\u001b]0;pwned\\u0007');
    expect(table).toContain('ok\\u000dFAKE ROW');
    expect(table).toContain('two\\u000alines');
    expect(table).toContain('abc\\u202edcba');
  }, 30_000);
});

describe('CLI edges', () => {
  test('whisker reload -c on a truncated config names the JSON error and exits 2', async () => {
    const dir = tempDir();
    const path = writeConfig(dir, { socketServer: { port: 0 } });
    writeFileSync(path, '{ "socketServer": { "port": 0 }, "logLe');
    const result = await whisker(['reload', '-c', path]);
    console.log(`truncated config: whisker reload says: ${result.stderr.trim()}`);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('is not valid JSON');
    expect(result.stderr).not.toContain('no broker is running');
  });

  test('whisker list | head -n 1 prints one line and no stack trace', async () => {
    const dir = tempDir();
    const path = writeConfig(dir, { socketServer: { port: 0 } });
    const broker = await startProcess(path);
    const peer = await RawPeer.open(Number(new URL(broker.url).port));
    await peer.login('lister', newKeyPair());
    // enough rows (about 200 KB) to outgrow the pipe once head has left
    peer.sendJson({ type: 'publish', messages: Array.from({ length: 5000 }, (_, i) => ({ messageId: `p${i}`, channel: `many/v1/id-${i}-${'x'.repeat(30)}`, data: 1, created: 1 })) });
    await peer.next('results');
    const shell = spawnSync('sh', ['-c', `"${process.execPath}" "${bin}" list -q many/v1 -c "${path}" | head -n 1`], { encoding: 'utf8', timeout: 15_000 });
    expect(shell.stdout.trim().split('\n')).toHaveLength(1);
    expect(shell.stderr).toBe('');
  }, 20_000);

  test('/favicon.ico is a small icon, not a 404, without the token', async () => {
    const managementPort = await freePort();
    const dir = tempDir();
    await startProcess(writeConfig(dir, { socketServer: { port: 0 }, management: { port: managementPort, token: 'secret-token' } }));
    const res = await fetch(`http://127.0.0.1:${managementPort}/favicon.ico`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/svg+xml');
    expect((await res.text()).startsWith('<svg')).toBe(true);
  });
});
