import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { createInterface } from 'node:readline';
import { dirname, join, resolve } from 'node:path';
import { WhiskerClient } from '../client/client.js';
import { parseConfigText } from '../config/text.js';
import { loadOrCreateKeys } from '../link/keys.js';
import type { ChannelString, DeliveryInfo } from '../client/types.js';
import { CommandError } from './control-client.js';
import { body, safe, time } from './text.js';

/**
 * `whisker pub` and `whisker sub`: a real client of the broker (the NATS CLI's pub/sub), so
 * keys, rules and formats apply as to any client (docs/operations.md#pub-and-sub).
 */
export interface MessagingOptions {
  readonly config?: string | undefined;
  /** broker strings, as in a client's `hosts` (`host:port@serviceId#token`) */
  readonly host?: string[] | undefined;
  readonly client?: string | undefined;
  readonly keys?: string | undefined;
  readonly json?: boolean | undefined;
  readonly string?: boolean | undefined;
  readonly count?: string | undefined;
  readonly consume?: boolean | undefined;
}

const print = (text: string): void => void process.stdout.write(text);
const say = (text: string): void => void process.stderr.write(text);
const DEFAULT_CLIENT = 'whisker-cli';

/** the brokers of `-c` (itself and its peers), or `--host` */
export function hostsOf(options: MessagingOptions): string[] {
  if (options.host && options.host.length > 0) return options.host;
  if (!options.config) return ['127.0.0.1:7780@whisker'];
  let raw: Record<string, unknown>;
  try {
    raw = parseConfigText(readFileSync(resolve(options.config), 'utf8'), resolve(options.config)) as Record<string, unknown>;
  } catch (error) {
    throw new CommandError(`cannot read ${resolve(options.config)}: ${(error as Error).message}`, 2);
  }
  const server = (raw.socketServer ?? {}) as { host?: string; port?: number; token?: string; tls?: unknown };
  if (server.tls) throw new CommandError('this broker speaks wss://: give --host wss://host:port@serviceId (and trust its certificate)', 2);
  const host = !server.host || server.host === '0.0.0.0' || server.host === '::' ? '127.0.0.1' : server.host;
  const self = `${host.includes(':') ? `[${host}]` : host}:${server.port ?? 7780}@${typeof raw.serviceId === 'string' ? raw.serviceId : typeof raw.serverId === 'string' ? raw.serverId : 'whisker'}${server.token ? `#${server.token}` : ''}`;
  const peers = Array.isArray(raw.peers) ? raw.peers.filter((p): p is string => typeof p === 'string') : [];
  return [self, ...peers];
}

async function connected(options: MessagingOptions): Promise<WhiskerClient> {
  const clientId = options.client ?? DEFAULT_CLIENT;
  const keysDirectory = resolve(options.keys ?? join(process.env.XDG_CONFIG_HOME ?? join(homedir(), '.config'), 'whisker'));
  const client = new WhiskerClient();
  client.on('error', (error: Error & { code?: string }) => say(`whisker: ${error.code ?? 'error'}: ${safe(error.message)}\n`));
  try {
    // the CLI's own key pair, made here without the library's warning: a terminal user expects it
    loadOrCreateKeys(keysDirectory, clientId);
    await client.connect({ hosts: hostsOf(options), clientId, keysDirectory, keysName: clientId, connectTimeout: 5000 });
  } catch (error) {
    await client.disconnect();
    const e = error as Error & { code?: string };
    throw new CommandError(`cannot connect as ${safe(clientId)} (keys in ${dirname(join(keysDirectory, 'x'))}): ${e.code ? `${e.code} ` : ''}${safe(e.message)}`);
  }
  return client;
}

/** DATA as JSON when it parses (`42`, `{"a":1}`), else as a string; `--string` always a string */
const parseData = (text: string, asString: boolean): unknown => {
  if (asString) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
};

/** E_SCHEMA's failing fields (docs/formats.md#details), one line each: `field (value): error` */
function detailLines(details: unknown): string[] {
  if (!Array.isArray(details)) return [];
  return details.slice(0, 50).map((d: { field?: unknown; value?: unknown; error?: unknown }) => {
    const field = typeof d.field === 'string' && d.field !== '' ? safe(d.field) : '(the message)';
    const value = Object.hasOwn(d, 'value') ? ` ${body(d.value)}` : '';
    return `${field}${value}: ${safe(String(d.error ?? 'invalid'))}`;
  });
}

/** ` (read ep/ver/id: reserved)`: why an E_FORBIDDEN was refused (its details), ` (revoked)` for an E_AUTH; '' otherwise */
function why(details: unknown): string {
  if (typeof details !== 'object' || details === null || Array.isArray(details)) return '';
  const d = details as { channel?: unknown; right?: unknown; reason?: unknown };
  if (typeof d.reason !== 'string') return '';
  const where = typeof d.right === 'string' && typeof d.channel === 'string' ? `${safe(d.right)} ${safe(d.channel)}: ` : '';
  return ` (${where}${safe(d.reason)})`;
}

/** `whisker pub CHANNEL DATA` or `whisker pub CHANNEL -` (one message per line of stdin) */
export async function runPub(channel: string | undefined, data: string | undefined, options: MessagingOptions): Promise<void> {
  if (!channel || data === undefined) throw new CommandError('pub needs CHANNEL and DATA (or - to read one message per line from stdin)', 2);
  const client = await connected(options);
  let failed = 0;
  const sendOne = async (text: string) => {
    try {
      const info = await client.send(channel as ChannelString, parseData(text, options.string === true));
      print(options.json ? JSON.stringify({ messageId: info.messageId, channel }) + '\n' : `sent ${info.messageId}\n`);
    } catch (error) {
      failed++;
      const e = error as Error & { code?: string; info?: { storedBy?: string[] }; details?: unknown };
      say(`whisker: not sent: ${e.code ?? 'error'}: ${safe(e.message)}${why(e.details)}${e.info?.storedBy?.length ? ` (stored by ${e.info.storedBy.map(safe).join(', ')})` : ''}\n`);
      for (const line of detailLines(e.details)) say(`  ${line}\n`);
    }
  };
  try {
    if (data === '-') {
      for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) if (line.trim() !== '') await sendOne(line);
    } else {
      await sendOne(data);
    }
  } finally {
    await client.disconnect();
  }
  if (failed > 0) throw new CommandError(`${failed} message${failed === 1 ? '' : 's'} not sent`);
}

/** `whisker sub CHANNEL [--consume] [--count N]`: listens (a copy for this client name) and prints */
export async function runSub(channel: string | undefined, options: MessagingOptions): Promise<void> {
  if (!channel) throw new CommandError('sub needs a CHANNEL (endpoint/version/id, id may be *)', 2);
  const limit = options.count === undefined ? Infinity : Number(options.count);
  if (!(limit > 0) || (limit !== Infinity && !Number.isSafeInteger(limit))) throw new CommandError('--count must be a positive integer', 2);
  const client = await connected(options);
  let seen = 0;
  let finish!: (error?: Error) => void;
  const finished = new Promise<void>((resolvePromise, reject) => (finish = (error) => (error ? reject(error) : resolvePromise())));
  const show = (msg: unknown, info: DeliveryInfo) => {
    seen++;
    const where = `${info.channel.endpoint}/${info.channel.version}/${info.channel.id}`;
    if (options.json) print(JSON.stringify({ channel: where, messageId: info.messageId, from: info.from, created: info.created, nbRequeues: info.nbRequeues ?? 0, data: msg }) + '\n');
    else print(`${time(info.created)}  ${safe(where)}  ${safe(info.from ?? '')}  ${info.messageId}  ${body(msg)}\n`);
  };
  const refused = (err: Error & { code?: string; details?: unknown }) => finish(new CommandError(`${err.code ?? 'error'}: ${safe(err.message)}${why(err.details)}`, err.code === 'E_BAD_CHANNEL' ? 2 : 1));
  // --count N: the subscription is held to what is left to print (docs/protocol.md#flow), so
  // the broker never hands over an N+1th: lowered before each ack (the flow frame is written
  // ahead of it), 0 after the Nth, so the unsubscribe finds nothing in flight to hand back
  const counted = Number.isFinite(limit);
  const held = counted ? { limit } : {};
  const take = (msg: unknown, info: DeliveryInfo): boolean => {
    if (seen >= limit) return false; // not ours (an older broker ignores the limit): never acked here
    show(msg, info);
    if (counted) handle.setLimit(limit - seen);
    return true;
  };
  const handle = options.consume
    ? client.consume(channel as ChannelString, held, (err, msg, done, info) => {
        if (err) return refused(err);
        if (!take(msg, info!)) return;
        done!();
        if (seen >= limit) finish();
      })
    : client.listen(channel as ChannelString, held, (err, msg, info) => {
        if (err) return refused(err);
        // a listener is acked when it returns: one past the count is left to the unsubscribe
        if (!take(msg, info!)) return new Promise<void>(() => {});
        if (seen >= limit) finish();
      });
  const onSignal = () => finish();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await Promise.race([handle.ready.then(() => say(`${options.consume ? 'consuming' : 'listening to'} ${safe(channel)} as ${safe(options.client ?? DEFAULT_CLIENT)}; Ctrl-C to stop\n`)), finished]);
    await finished;
    // the unsubscribe leaves after the acks (frames keep their order): its answer means the broker has them
    await Promise.resolve(handle.close()).catch(() => undefined);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await client.disconnect();
  }
}
