import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';
import { root } from '../support/broker-process.js';
import { tempDir } from '../support/harness.js';

/**
 * Issue 29 item 10: what `npm pack` ships (a license, the systemd unit) and etcd3 as an
 * optional peer dependency: a broker without an election block runs without it, one with an
 * election block and no etcd3 stops with the command that installs it.
 */
const run = promisify(execFile);
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, Record<string, unknown>>;

describe('the npm package', () => {
  test('npm pack lists the LICENSE (MIT, as package.json says), the systemd unit, the CLI and the built library', async () => {
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, timeout: 60_000 });
    const files = (JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path);
    expect(files).toEqual(expect.arrayContaining(['LICENSE', 'systemd/whisker.service', 'bin/whisker', 'dist/index.js', 'dist/index.d.ts', 'dist/cli/main.js', 'config.example.json', 'README.md']));
    expect(files.filter((f) => f.startsWith('test/') || f.startsWith('src/'))).toEqual([]);
    expect(pkg.license).toBe('MIT');
    const license = readFileSync(join(root, 'LICENSE'), 'utf8');
    expect(license).toMatch(/^MIT License\n\nCopyright \(c\) 2026 the Whisker authors\n/);
  }, 90_000);

  test('etcd3 is an optional peer dependency (and a dev dependency for the tests), not a dependency', () => {
    expect(pkg.dependencies).not.toHaveProperty('etcd3');
    expect(pkg.peerDependencies).toHaveProperty('etcd3');
    expect(pkg.peerDependenciesMeta).toEqual(expect.objectContaining({ etcd3: { optional: true } }));
    expect(pkg.devDependencies).toHaveProperty('etcd3');
  });

  test('installed without etcd3: the CLI and client load; with an election block it exits 2 naming the install command', async () => {
    // an install of whisker-mq whose node_modules holds every package but etcd3
    const dir = tempDir('whisker-noetcd-');
    const installed = join(dir, 'whisker-mq');
    mkdirSync(join(installed, 'node_modules'), { recursive: true });
    for (const entry of ['dist', 'bin', 'package.json', 'config.example.json']) symlinkSync(join(root, entry), join(installed, entry));
    for (const name of readdirSync(join(root, 'node_modules'))) {
      if (name === 'etcd3' || name === '.bin' || name.startsWith('.')) continue;
      symlinkSync(join(root, 'node_modules', name), join(installed, 'node_modules', name));
    }
    const config = (extra: Record<string, unknown>) => {
      const path = join(dir, `config-${Object.keys(extra).length}.json`);
      writeFileSync(path, JSON.stringify({ dataDirectory: join(dir, `data-${Object.keys(extra).length}`), socketServer: { port: 0 }, logLevel: 'silent', ...extra }));
      return path;
    };
    // --preserve-symlinks: modules resolve from this folder's node_modules, as in a real install
    const whisker = (args: string[]) =>
      run(process.execPath, ['--preserve-symlinks', '--preserve-symlinks-main', join(installed, 'bin', 'whisker'), ...args], { timeout: 20_000 }).then(
        (r) => ({ code: 0, ...r }),
        (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
      );
    const noElection = await whisker(['pub', 'a/v1/x', '1', '--host', '127.0.0.1:1@whisker', '--keys', join(dir, 'keys')]);
    expect(noElection.stderr).not.toMatch(/etcd3|Cannot find/); // the CLI and the client load without it
    const elected = await whisker(['start', '-c', config({ election: { etcd: { hosts: ['http://127.0.0.1:1'] }, prefix: '/w' } })]);
    expect(elected.code).toBe(2);
    expect(elected.stderr).toContain('whisker: config key "election": needs the etcd3 package, which is not installed: run "npm install etcd3@^1.1.2" where whisker-mq is installed');
  }, 60_000);
});
