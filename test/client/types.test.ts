import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';
import { tempDir } from '../support/harness.js';

/**
 * issue #16, "types that help": the README example and examples/typed.ts compile under
 * `tsc --strict` against the built package (dist/, made by `npm test`), in a project that has
 * the package, its dependencies and `@types/node` only: no `@types/ws`.
 */
const root = resolve(import.meta.dirname, '../..');
const require = createRequire(import.meta.url);
const tsc = require.resolve('typescript/bin/tsc');

function project(files: Record<string, string>): string {
  const dir = tempDir('whisker-types-');
  const modules = join(dir, 'node_modules');
  mkdirSync(join(modules, '@types'), { recursive: true });
  symlinkSync(root, join(modules, 'whisker-mq'));
  symlinkSync(join(root, 'node_modules/@types/node'), join(modules, '@types/node'));
  symlinkSync(dirname(require.resolve('undici-types/package.json')), join(modules, 'undici-types'));
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  for (const name of Object.keys(pkg.dependencies)) symlinkSync(join(root, 'node_modules', name), join(modules, name));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  const compilerOptions = { strict: true, noEmit: true, skipLibCheck: false, preserveSymlinks: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', types: ['node'] };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: Object.keys(files) }));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

async function compile(dir: string): Promise<string> {
  try {
    await promisify(execFile)(process.execPath, [tsc, '-p', dir], { cwd: dir });
    return '';
  } catch (error) {
    return (error as { stdout: string }).stdout;
  }
}

function readmeExample(): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const block = /```js\n(import \{ client \} from 'whisker-mq';[\s\S]*?)```/.exec(readme);
  if (!block) throw new Error('README has no ```js example importing whisker-mq');
  return block[1]!;
}

const WRONG = [
  "import { client } from 'whisker-mq';",
  'const mq = client();',
  "mq.on('reconect', () => {});",
  "mq.consume<{ qty: number }>('o/v1/*', (err, msg, done) => { if (!err) console.log(msg.sku); done(); });",
  'void mq.disconnect().then((x: number) => x);',
  "void mq.send('o/v1/1', null);",
  "mq.addListener('reconect', () => {}).removeListener('conect', () => {}).prependListener('eror', () => {}).prependOnceListener('mastr', () => {});",
].join('\n');

describe('published types', () => {
  test('the README example and examples/typed.ts compile under tsc --strict without @types/ws; a misspelt event, a wrong payload, a wrong promise type, a null payload do not', async () => {
    const dir = project({ 'readme.ts': readmeExample(), 'typed.ts': readFileSync(join(root, 'examples/typed.ts'), 'utf8'), 'wrong.ts': WRONG });
    const errors = (await compile(dir)).split('\n').filter((line) => /error TS/.test(line));
    // one compile for all three files (tsc is slow on a shared machine); only wrong.ts may fail, on each of its lines 3-7
    expect(errors.filter((line) => !line.startsWith('wrong.ts'))).toEqual([]);
    expect(new Set(errors.map((line) => /^wrong\.ts\((\d+),/.exec(line)?.[1]))).toEqual(new Set(['3', '4', '5', '6', '7']));
    // a misspelt event is reported on the name, not as a listener "not assignable to never" (issue #29 item 11)
    const misspelt = errors.find((line) => line.startsWith('wrong.ts(3,')) ?? '';
    expect(misspelt).toContain('"reconect"');
    expect(misspelt).not.toContain("'never'");
    // the Node names Kitten code uses (addListener, removeListener, prepend...) say so on the name too
    const line7 = errors.filter((line) => line.startsWith('wrong.ts(7,'));
    expect(line7.map((line) => /"(\w+)"/.exec(line)?.[1])).toEqual(['reconect', 'conect', 'eror', 'mastr']);
    expect(line7.join('\n')).not.toContain("'never'");
    // send(ch, null) always fails E_NO_VALUE: its type error says so (issue #29 item 11)
    expect(errors.find((line) => line.startsWith('wrong.ts(6,'))).toContain('E_NO_VALUE');
  }, 90_000);
});
