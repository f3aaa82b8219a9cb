import { parseArgs } from 'node:util';
import { existsSync, readFileSync } from 'node:fs';
import { CommandError } from './control-client.js';
import { safe } from './text.js';
import { nearest } from '../config/problems.js';
import { kittenSpellings, optionErrorLine, type OptionSpec } from './args.js';

const DEFAULT_CONFIG_FILE = 'whisker.config.json';

const USAGE = `Usage: whisker <command> [options]

Commands:
  start [-c config] [--no-watch] run a broker in the foreground; without -c: ./whisker.config.json if
                                 it exists, else the built-in default. It reloads when the file
                                 changes (unless --no-watch), on SIGHUP and SIGUSR2
  reload [-c config]             re-read the config file; prints what needs a restart
  soft-stop [-c config]          refuse new work, finish what is in flight, stop (what SIGTERM does)
  step-down [-c config]          elected master: hand leadership over once what is in flight is acked
  stop [-c config]               stop at once (in-flight messages are delivered again after a restart)
  status [-c config]             role, uptime, connections, queues, config path
  move EP/VER --to SET           move a queue to another set of the cluster, with what it holds
  cluster status [-c config]     a cluster's sets, brokers, masters and epochs, queues and rates per set;
    [--placements [--set S] [-n N]]  and which queue is on which set (the first N by name, default 100)
  list [-q ep/ver] [-i id] [-m]  queues and message counts; -q: ids of a queue; -m: messages (no bodies)
  delete -q ep/ver [-i id] --yes empty a queue, or one id of it (subscriptions stay)
  delete -q ep/ver --history --yes  drop a retained channel's history (docs/configuration.md#retention)
  keys list | keys revoke NAME   registered client keys; revoke one and close its connections
  reservations list              reserved ids (! read patterns) with the client name holding each
  reservations release CHANNEL   free a reserved id (ep/ver/id) for the next subscriber
  keygen [--dir DIR] [--name N]  make an Ed25519 key pair: N.pem (private, 0600) and N.pub
  init-conf [path]               write the documented default config (config.example.json)

For people at a terminal:
  pub CHANNEL DATA|-             send DATA (JSON if it parses, else a string; --string: always a
                                 string), or one message per line of stdin with -
  sub CHANNEL [--consume]        listen (or --consume: take and ack) and print each message
  tail QUEUE [-i id]             print every message entering the queue; takes nothing
  peek QUEUE [-i id] [-n N]      the oldest held messages (bodies only with showBodies in the config)
  stat [QUEUE] [--interval S]    a line of live rates every S seconds (default 2)
  dlq list [-q QUEUE] [-n N]     dead-letter queues and their oldest dead letters
  dlq replay -q QUEUE ID...|--all        send them again to their original channel, then drop them
  dlq purge -q QUEUE ID...|--all --yes   drop them

pub and sub are clients of the broker: they connect to the broker of -c and its peers (or
--host, repeatable: host:port@serviceId#token) as --client NAME (default whisker-cli), with the
key pair NAME.pem/NAME.pub in --keys DIR (default ~/.config/whisker; made when missing).
reload, soft-stop, step-down, stop, status, list, delete, keys, reservations and the others reach the
running broker through its control socket, <dataDirectory>/whisker.sock, found from -c
(without -c: from ./whisker.config.json if it exists, else ./whisker-data).

Options:
  -c, --config FILE  the broker's config file
  --socket PATH      the control socket, when it is not in the config's data directory
  --json             machine-readable output (one JSON object per line for sub, tail, stat)
  --count N          sub, tail, stat: stop after N messages (lines)
  -h, --help         this text
  -v, --version      the version

Kitten-MQ spellings: --channel is -i; -p, -r, -s, -prs (list, delete) are ignored with a note.

Exit codes: 0 ok, 1 failure (no broker running, ...), 2 bad usage or a config refused.
`;

const COMMANDS = ['start', 'reload', 'soft-stop', 'stop', 'step-down', 'status', 'cluster', 'move', 'list', 'delete', 'keys', 'reservations', 'pub', 'sub', 'tail', 'peek', 'stat', 'dlq', 'keygen', 'init-conf'];

const OPTIONS = {
  config: { type: 'string', short: 'c' },
  socket: { type: 'string' },
  'no-watch': { type: 'boolean' },
  json: { type: 'boolean' },
  queue: { type: 'string', short: 'q' },
  id: { type: 'string', short: 'i' },
  messages: { type: 'boolean', short: 'm' },
  yes: { type: 'boolean' },
  history: { type: 'boolean' },
  dir: { type: 'string' },
  name: { type: 'string' },
  host: { type: 'string', multiple: true },
  client: { type: 'string' },
  keys: { type: 'string' },
  string: { type: 'boolean' },
  consume: { type: 'boolean' },
  count: { type: 'string' },
  interval: { type: 'string' },
  limit: { type: 'string', short: 'n' },
  all: { type: 'boolean' },
  to: { type: 'string' },
  timeout: { type: 'string' },
  placements: { type: 'boolean' },
  set: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const satisfies Record<string, OptionSpec & { multiple?: boolean }>;

/** Exit codes: 0 ok, 1 runtime failure, 2 bad usage or bad config. */
export async function main(argv: readonly string[]): Promise<number> {
  // `whisker list | head -n 1`: the reader left, nothing more to say (not a stack trace)
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit(0);
  });
  const { args, notes } = kittenSpellings(argv, OPTIONS);
  for (const note of notes) process.stderr.write(`whisker: ${note}\n`);
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: OPTIONS });
  } catch (error) {
    process.stderr.write(`whisker: ${optionErrorLine(error as Error, OPTIONS)}\n`);
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
  // without -c, ./whisker.config.json when it exists (SPEC §10), for start and for the commands that find its broker
  const implicit = values.config === undefined && existsSync(DEFAULT_CONFIG_FILE);
  const config = values.config ?? (implicit ? DEFAULT_CONFIG_FILE : undefined);
  const control = { config, socket: values.socket, json: values.json };
  const messaging = { config: config, host: values.host, client: values.client, keys: values.keys, json: values.json, string: values.string, count: values.count, consume: values.consume };
  const inspect = { ...control, queue: values.queue, id: values.id, limit: values.limit, count: values.count, interval: values.interval };
  // each command loads only its own modules: `whisker status` need not load the broker
  try {
    switch (command) {
      case 'start':
        return await (await import('./start.js')).runStart(config, { watch: values['no-watch'] !== true, implicit });
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
      case 'cluster':
        await (await import('./cluster.js')).runCluster(rest[0], { ...control, placements: values.placements, set: values.set, limit: values.limit });
        return 0;
      case 'move':
        await (await import('./cluster.js')).runMove(rest[0], { ...control, to: values.to, timeout: values.timeout });
        return 0;
      case 'list':
        await (await import('./queues.js')).runList({ ...control, queue: values.queue, id: values.id, messages: values.messages });
        return 0;
      case 'delete':
        await (await import('./queues.js')).runDelete({ ...control, queue: values.queue, id: values.id, yes: values.yes, history: values.history });
        return 0;
      case 'keys':
        await (await import('./keys.js')).runKeys(rest[0], rest[1], control);
        return 0;
      case 'reservations':
        await (await import('./reservations.js')).runReservations(rest[0], rest[1], control);
        return 0;
      case 'pub':
        await (await import('./messaging.js')).runPub(rest[0], rest[1], messaging);
        return 0;
      case 'sub':
        await (await import('./messaging.js')).runSub(rest[0], messaging);
        return 0;
      case 'tail':
        await (await import('./inspect.js')).runTail(rest[0], inspect);
        return 0;
      case 'peek':
        await (await import('./inspect.js')).runPeek(rest[0], inspect);
        return 0;
      case 'stat':
        await (await import('./inspect.js')).runStat(rest[0], inspect);
        return 0;
      case 'dlq':
        await (await import('./dlq.js')).runDlq(rest[0], rest.slice(1), { ...control, queue: values.queue, limit: values.limit, all: values.all, yes: values.yes });
        return 0;
      case 'keygen':
        return (await import('./files.js')).runKeygen(values.dir ?? 'keys', values.name ?? 'client');
      case 'init-conf':
        return (await import('./files.js')).runInitConf(rest[0] ?? DEFAULT_CONFIG_FILE);
      default: {
        const guess = nearest(command, COMMANDS);
        process.stderr.write(`whisker: unknown command "${safe(command)}"${guess ? `; did you mean "${guess}"?` : ''} (whisker --help lists them)\n`);
        return 2;
      }
    }
  } catch (error) {
    if (!(error instanceof CommandError)) throw error;
    process.stderr.write(`whisker: ${safe(error.message)}\n`);
    return error.exitCode;
  }
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}
