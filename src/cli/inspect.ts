import { ask, CommandError, follow, locate, resultOf } from './control-client.js';
import type { ControlOptions } from './lifecycle.js';
import { table } from './table.js';
import { body, safe, time } from './text.js';

const print = (text: string): void => void process.stdout.write(text);
const say = (text: string): void => void process.stderr.write(text);

export interface InspectOptions extends ControlOptions {
  readonly queue?: string | undefined;
  readonly id?: string | undefined;
  readonly limit?: string | undefined;
  readonly count?: string | undefined;
  readonly interval?: string | undefined;
}

function needQueue(options: InspectOptions, positional: string | undefined, verb: string): string {
  const queue = positional ?? options.queue;
  if (!queue) throw new CommandError(`${verb} needs a queue: endpoint/version`, 2);
  return queue;
}

function positiveNumber(text: string | undefined, what: string, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new CommandError(`${what} must be a positive number`, 2);
  return n;
}

/** a promise resolved by the first SIGINT or SIGTERM: a following command ends cleanly */
function interrupted(): { stop: Promise<void>; release: () => void } {
  let resolve!: () => void;
  const stop = new Promise<void>((r) => (resolve = r));
  const onSignal = () => resolve();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return { stop, release: () => { process.off('SIGINT', onSignal); process.off('SIGTERM', onSignal); } };
}

interface Peeked {
  queue: string;
  size: number;
  bodies: boolean;
  truncated: boolean;
  messages: Array<{ messageId: string; id: string; created: number; from: string; waitingForSubscriber: boolean; groups: Array<{ state: string; nbRequeues: number }>; data?: unknown }>;
}

/** `whisker peek QUEUE [-i id] [-n N]`: the oldest held messages, taking nothing; bodies only with showBodies */
export async function runPeek(positional: string | undefined, options: InspectOptions): Promise<void> {
  const queue = needQueue(options, positional, 'peek');
  const target = locate(options.config, options.socket);
  const request = { command: 'peek', queue, ...(options.id !== undefined ? { id: options.id } : {}), limit: positiveNumber(options.limit, '-n', 20) };
  const view = resultOf(await ask(target, request), 2) as Peeked;
  if (options.json) return print(JSON.stringify(view) + '\n');
  if (view.messages.length === 0) return print(`${safe(view.queue)} holds no message${options.id !== undefined ? ` for id ${safe(options.id)}` : ''}\n`);
  const header = ['MESSAGE ID', 'ID', 'CREATED', 'FROM', 'REQUEUES', 'STATE', ...(view.bodies ? ['DATA'] : [])];
  const rows = view.messages.map((m) => [
    m.messageId, m.id, time(m.created), m.from, Math.max(0, ...m.groups.map((g) => g.nbRequeues)),
    m.waitingForSubscriber ? 'no subscriber yet' : m.groups.map((g) => g.state).join(',') || '-',
    ...(view.bodies ? [body(m.data)] : []),
  ]);
  print(table(header, rows));
  print(`${view.messages.length} of ${view.size} held${view.bodies ? '' : '; bodies hidden (showBodies is off in the config)'}\n`);
}

interface TailEvent { messageId?: string; id?: string; from?: string; acceptedAt?: number; data?: unknown; dropped?: number }

/** `whisker tail QUEUE [-i id] [--count N]`: every message entering the queue, as it comes; takes nothing */
export async function runTail(positional: string | undefined, options: InspectOptions): Promise<void> {
  const queue = needQueue(options, positional, 'tail');
  const limit = options.count === undefined ? Infinity : positiveNumber(options.count, '--count', 1);
  const target = locate(options.config, options.socket);
  const signal = interrupted();
  let seen = 0;
  let stopCounting!: () => void;
  const counted = new Promise<void>((r) => (stopCounting = r));
  try {
    await follow(target, { command: 'tail', queue, ...(options.id !== undefined ? { id: options.id } : {}) }, (raw) => {
      const event = raw as TailEvent;
      if (event.dropped !== undefined) return say(`whisker: ${event.dropped} messages not shown (this terminal did not keep up)\n`);
      if (seen >= limit) return;
      seen++;
      if (options.json) print(JSON.stringify(event) + '\n');
      else print(`${time(event.acceptedAt)}  ${safe(`${queue}/${event.id ?? ''}`)}  ${safe(event.from ?? '')}  ${event.messageId ?? ''}${'data' in event ? `  ${body(event.data)}` : ''}\n`);
      if (seen >= limit) stopCounting();
    }, {
      stop: Promise.race([signal.stop, counted]),
      onAnswer: (result) => {
        const { bodies } = result as { bodies: boolean };
        say(`following ${safe(queue)}${options.id !== undefined ? ` id ${safe(options.id)}` : ''}, taking nothing${bodies ? '' : ', bodies hidden (showBodies is off)'}; Ctrl-C to stop\n`);
      },
      exitCode: 2,
    });
  } finally {
    signal.release();
  }
}

interface Stats {
  at: number;
  queues: Array<{ queue: string; depth: number; inFlight: number; consumers: number; oldestWaitingSeconds: number; counters: Record<string, number> }>;
}

/** `whisker stat [-q QUEUE] [--interval S] [--count N]`: a line of live rates every interval, like nsq_stat */
export async function runStat(positional: string | undefined, options: InspectOptions): Promise<void> {
  const queue = positional ?? options.queue;
  const intervalMs = positiveNumber(options.interval, '--interval', 2) * 1000;
  const rows = options.count === undefined ? Infinity : positiveNumber(options.count, '--count', 1);
  const target = locate(options.config, options.socket);
  const sample = async () => resultOf(await ask(target, { command: 'stats', ...(queue !== undefined ? { queue } : {}) })) as Stats;
  const signal = interrupted();
  try {
    let previous = await sample();
    if (queue !== undefined && previous.queues.length === 0) say(`whisker: no queue ${safe(queue)} yet; waiting for it\n`);
    const header = ['DEPTH', 'IN FLIGHT', 'CONSUMERS', 'OLDEST s', 'IN/s', 'OUT/s', 'ACKED/s', 'REQUEUED/s', 'DEAD/s'];
    if (!options.json) print(`${safe(queue ?? 'all queues')}, every ${intervalMs / 1000} s\n` + table(header, []).trimEnd() + '\n');
    for (let printed = 0; printed < rows; printed++) {
      let timer: NodeJS.Timeout | undefined;
      const stopped = await Promise.race([signal.stop.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), intervalMs)))]);
      clearTimeout(timer);
      if (stopped) return;
      const current = await sample();
      const line = statLine(previous, current);
      previous = current;
      if (options.json) print(JSON.stringify(line) + '\n');
      else print(header.map((h, i) => String(Object.values(line)[i]).padStart(h.length)).join('  ') + '\n');
    }
  } finally {
    signal.release();
  }
}

function statLine(before: Stats, after: Stats) {
  const seconds = Math.max(0.001, (after.at - before.at) / 1000);
  const total = (stats: Stats, key: string) => stats.queues.reduce((sum, q) => sum + (q.counters[key] ?? 0), 0);
  const rate = (key: string) => Math.round((Math.max(0, total(after, key) - total(before, key)) / seconds) * 10) / 10;
  return {
    depth: after.queues.reduce((s, q) => s + q.depth, 0),
    inFlight: after.queues.reduce((s, q) => s + q.inFlight, 0),
    consumers: after.queues.reduce((s, q) => s + q.consumers, 0),
    oldestSeconds: Math.round(Math.max(0, ...after.queues.map((q) => q.oldestWaitingSeconds))),
    in: rate('received'),
    out: rate('delivered'),
    acked: rate('acked'),
    requeued: rate('requeued'),
    deadLettered: rate('deadLettered'),
  };
}
