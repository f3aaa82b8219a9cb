import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { CommandError } from './control-client.js';

const USAGE = `Usage: whisker <command> [options]

Commands:
  start [-c config] [--no-watch] run a broker in the foreground (built-in default config without -c);
                                 it reloads when the file changes, unless --no-watch
  reload [-c config]             re-read the config file; prints what needs a restart
  soft-stop [-c config]          refuse new work, finish what is in flight, stop (what SIGTERM does)
  step-down [-c config]          elected master: hand leadership over once what is in flight is acked
  stop [-c config]               stop at once (in-flight messages are delivered again after a restart)
  status [-c config]             role, uptime, connections, queues, config path
  list [-q ep/ver] [-i id] [-m]  queues and message counts; -q: ids of a queue; -m: messages (no bodies)
  delete -q ep/ver [-i id] --yes empty a queue, or one id of it (subscriptions stay)
  keys list | keys revoke NAME   registered client keys; revoke one and close its connections
  keygen [--dir DIR] [--name N]  make an Ed25519 key pair: N.pem (private, 0600) and N.pub
  init-conf [path]               write the documented default config (config.example.json)

reload, soft-stop, step-down, stop, status, list, delete and keys reach the running broker through its
control socket, <dataDirectory>/whisker.sock, found from -c (./whisker-data without -c).

Options:
  -c, --config FILE  the broker's config file
  --socket PATH      the control socket, when it is not in the config's data directory
  --json             machine-readable output
  -h, --help         this text
  -v, --version      the version

Exit codes: 0 ok, 1 failure (no broker running, ...), 2 bad usage or a config refused.
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
        socket: { type: 'string' },
        'no-watch': { type: 'boolean' },
        json: { type: 'boolean' },
        queue: { type: 'string', short: 'q' },
        id: { type: 'string', short: 'i' },
        messages: { type: 'boolean', short: 'm' },
        yes: { type: 'boolean' },
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
  const control = { config: values.config, socket: values.socket, json: values.json };
  // each command loads only its own modules: `whisker status` need not load the broker
  try {
    switch (command) {
      case 'start':
        return await (await import('./start.js')).runStart(values.config, { watch: values['no-watch'] !== true });
      case 'reload':
        await (await import('./lifecycle.js')).runReload(control);
        return 0;
      case 'soft-stop':
        await (await import('./lifecycle.js')).runSoftStop(control);
        return 0;
      case 'stop':
        await (await import('./lifecycle.js')).runStop(control);
        return 0;
      case 'step-down':
        await (await import('./lifecycle.js')).runStepDown(control);
        return 0;
      case 'status':
        await (await import('./lifecycle.js')).runStatus(control);
        return 0;
      case 'list':
        await (await import('./queues.js')).runList({ ...control, queue: values.queue, id: values.id, messages: values.messages });
        return 0;
      case 'delete':
        await (await import('./queues.js')).runDelete({ ...control, queue: values.queue, id: values.id, yes: values.yes });
        return 0;
      case 'keys':
        await (await import('./keys.js')).runKeys(rest[0], rest[1], control);
        return 0;
      case 'keygen':
        return (await import('./files.js')).runKeygen(values.dir ?? 'keys', values.name ?? 'client');
      case 'init-conf':
        return (await import('./files.js')).runInitConf(rest[0] ?? 'whisker.config.json');
      default:
        process.stderr.write(`whisker: unknown command "${command}"\n\n${USAGE}`);
        return 2;
    }
  } catch (error) {
    if (!(error instanceof CommandError)) throw error;
    process.stderr.write(`whisker: ${error.message}\n`);
    return error.exitCode;
  }
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}
