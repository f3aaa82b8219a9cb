import { generateKeyPairSync } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const NAME = /^[A-Za-z0-9._-]{1,128}$/;

/** `whisker keygen`: never overwrites an existing pair. */
export function runKeygen(directory: string, name: string): number {
  if (!NAME.test(name)) {
    process.stderr.write(`whisker: key name must match ${NAME}\n`);
    return 2;
  }
  const privatePath = join(resolve(directory), `${name}.pem`);
  const publicPath = join(resolve(directory), `${name}.pub`);
  if (existsSync(privatePath) || existsSync(publicPath)) {
    process.stderr.write(`whisker: ${privatePath} or ${publicPath} exists already, not overwritten\n`);
    return 1;
  }
  const pair = generateKeyPairSync('ed25519');
  mkdirSync(resolve(directory), { recursive: true, mode: 0o700 });
  writeFileSync(privatePath, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
  writeFileSync(publicPath, pair.publicKey.export({ type: 'spki', format: 'pem' }), { mode: 0o600, flag: 'wx' });
  process.stdout.write(`${privatePath}\n${publicPath}\n`);
  return 0;
}

/** `whisker init-conf`: a copy of config.example.json, the documented default. */
export function runInitConf(path: string): number {
  const target = resolve(path);
  if (existsSync(target)) {
    process.stderr.write(`whisker: ${target} exists already, not overwritten\n`);
    return 1;
  }
  copyFileSync(new URL('../../config.example.json', import.meta.url), target);
  process.stdout.write(`${target}\n`);
  return 0;
}
