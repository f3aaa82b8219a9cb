// Item 3: the whisker sub/pub CLI shows refusal details (and never another client's name).
import { makeNodes, start, mkClient, keyPair, sleep, check, cleanup, base } from './harness.mjs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
const pexec = promisify(execFile);
const rules = [{ client: 'easilys-*', read: ['!invoice/*'] }, { client: 'other-*', read: ['!invoice/*'] }];
const [a] = await makeNodes(['a'], { rules });
await start(a); await sleep(500);
const e = await mkClient([a], 'easilys-a', keyPair());
await e.listen('invoice/v1/1', () => {}).ready;
const bin = join(process.cwd(), '..', '..', 'bin', 'whisker');
for (const args of [['sub', 'invoice/v1/1', '--count', '1'], ['pub', 'invoice/v1/1', 'x']]) {
  let out;
  try { const r = await pexec('node', [bin, ...args, '--client', 'other-x', '--keys', join(base, 'cli-keys'), '--host', a.host], { timeout: 15000 }); out = { code: 0, s: r.stdout + r.stderr }; } catch (x) { out = { code: x.code, s: (x.stdout ?? '') + (x.stderr ?? '') }; }
  console.log(args[0], 'exit', out.code, JSON.stringify(out.s));
  check(`whisker ${args[0]} refusal shows reason`, /reserved|no-rule/.test(out.s) && !/easilys/.test(out.s), out.s);
}
await cleanup(); process.exit(0);
