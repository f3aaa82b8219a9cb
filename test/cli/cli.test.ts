import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { connect, Inbox, tempDir } from '../support/harness.js';

/** The built package and the `whisker` command, as real processes (they need `npm run build`). */
const root = join(import.meta.dirname, '..', '..');
const bin = join(root, 'bin', 'whisker');

function run(args: string[], cwd = root) {
  return spawnSync(process.execPath, [bin, ...args], { cwd, encoding: 'utf8', timeout: 10_000 });
}

describe('package', () => {
  test('import and require both give the client', () => {
    const esm = spawnSync(process.execPath, ['--input-type=module', '-e', "import { client } from 'whisker-mq'; console.log(typeof client, typeof client().send)"], { cwd: root, encoding: 'utf8' });
    const cjs = spawnSync(process.execPath, ['-e', "console.log(typeof require('whisker-mq').client)"], { cwd: root, encoding: 'utf8' });
    expect(esm.stdout.trim()).toBe('function function');
    expect(cjs.stdout.trim()).toBe('function');
    expect(cjs.stderr).toBe('');
  });
});

describe('whisker start', () => {
  test('a config with an unknown key exits 2 naming the key', () => {
    const dir = tempDir();
    const path = join(dir, 'bad.json');
    writeFileSync(path, JSON.stringify({ socketServer: { port: 0, prot: 1 } }));
    const result = run(['start', '-c', path]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('socketServer.prot');
  });

  test('a config with a bad value exits 2 naming the key', () => {
    const dir = tempDir();
    const path = join(dir, 'bad.json');
    writeFileSync(path, JSON.stringify({ requeueLimit: 'five' }));
    const result = run(['start', '-c', path]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('requeueLimit');
  });

  test('a broken channel map exits 2 naming the channel and the field', () => {
    const dir = tempDir();
    const path = join(dir, 'bad.json');
    writeFileSync(path, JSON.stringify({ channels: { 'shop/v1': { map: { price: ['nosuchtype'] } } } }));
    const result = run(['start', '-c', path]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('shop/v1');
    expect(result.stderr).toContain('price');
  });

  test('a file that is not JSON exits 2', () => {
    const dir = tempDir();
    const path = join(dir, 'bad.json');
    writeFileSync(path, '{ nope');
    expect(run(['start', '-c', path]).status).toBe(2);
  });

  test('config.example.json is valid and starts', async () => {
    const dir = tempDir();
    const example = JSON.parse((await import('node:fs')).readFileSync(join(root, 'config.example.json'), 'utf8')) as Record<string, unknown>;
    const path = join(dir, 'config.json');
    writeFileSync(path, JSON.stringify({ ...example, socketServer: { host: '127.0.0.1', port: 0 } }));
    await withBroker(path, dir, async () => {});
  });

  test('runs a broker in the foreground that a client can use, and stops on SIGTERM with exit 0', async () => {
    const dir = tempDir();
    const path = join(dir, 'config.json');
    writeFileSync(path, JSON.stringify({ serviceId: 'cli-test', socketServer: { port: 0 } }));
    await withBroker(path, dir, async (url) => {
      const host = `${url.replace('ws://', '')}@cli-test`;
      const [c, p] = await Promise.all([connect('cli-consumer', host), connect('cli-producer', host)]);
      const inbox = new Inbox();
      await c.consume('cli/v1/1', inbox.consumer).ready;
      await p.send('cli/v1/1', { ok: true });
      const [got] = await inbox.waitFor(1);
      expect(got!.msg).toEqual({ ok: true });
      await Promise.all([c.disconnect(), p.disconnect()]);
    });
  });
});

describe('other commands', () => {
  test('keygen writes a key pair with a private file of mode 0600, and never overwrites', async () => {
    const dir = tempDir();
    expect(run(['keygen', '--dir', dir, '--name', 'svc']).status).toBe(0);
    const { statSync } = await import('node:fs');
    expect(statSync(join(dir, 'svc.pem')).mode & 0o777).toBe(0o600);
    expect(run(['keygen', '--dir', dir, '--name', 'svc']).status).toBe(1);
  });

  test('--version, --help and an unknown command', () => {
    expect(run(['--version']).stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    expect(run(['--help']).stdout).toContain('start');
    expect(run(['frobnicate']).status).toBe(2);
  });
});

/** starts `whisker start -c path`, waits for its listening URL in the log, runs `work`, stops it */
async function withBroker(path: string, cwd: string, work: (url: string) => Promise<void>): Promise<void> {
  const child = spawn(process.execPath, [bin, 'start', '-c', path], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /"url":"(ws:\/\/[^"]+)"/.exec(out);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`broker exited ${code}: ${out}`)));
  });
  try {
    await work(url);
  } finally {
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }
}
