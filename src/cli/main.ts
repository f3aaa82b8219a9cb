import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { runInitConf, runKeygen } from './files.js';
import { runStart } from './start.js';

const USAGE = `Usage: whisker <command> [options]

Commands:
  start [-c config]              run a broker in the foreground (built-in default config without -c)
  keygen [--dir DIR] [--name N]  make an Ed25519 key pair: N.pem (private, 0600) and N.pub
  init-conf [path]               write the documented default config (config.example.json)

Options:
  -h, --help       this text
  -v, --version    the version
`;

/** Exit codes: 0 ok, 1 runtime failure, 2 bad usage or bad config. */
export async function main(argv: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        config: { type: 'string', short: 'c' },
        dir: { type: 'string' },
        name: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    });
  } catch (error) {
    process.stderr.write(`whisker: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.version) {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    process.stdout.write(USAGE);
    return command || values.help ? 0 : 2;
  }
  switch (command) {
    case 'start':
      return runStart(values.config);
    case 'keygen':
      return runKeygen(values.dir ?? 'keys', values.name ?? 'client');
    case 'init-conf':
      return runInitConf(rest[0] ?? 'whisker.config.json');
    default:
      process.stderr.write(`whisker: unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}
