import { ask, CommandError, locate, resultOf } from './control-client.js';
import type { ControlOptions } from './lifecycle.js';
import { print, printJson, table } from './table.js';
import { safe } from './text.js';

export interface ListOptions extends ControlOptions {
  readonly queue?: string | undefined;
  readonly id?: string | undefined;
  readonly messages?: boolean | undefined;
}

interface MessageView {
  messageId: string;
  id: string;
  created: number;
  acceptedAt: number;
  from: string;
  waitingForSubscriber: boolean;
  groups: Array<{ group: string; state: string; nbRequeues: number }>;
}

interface QueueView {
  queue: string;
  messages: number;
  waiting: number;
  inFlight: number;
  idCount: number;
  ids?: Array<{ id: string; count: number }>;
  idsTruncated?: boolean;
  messageList?: MessageView[];
  messagesTruncated?: boolean;
}


/** `whisker list [-q endpoint/version] [-i id] [-m]`: counts, ids, message metadata; never bodies */
export async function runList(options: ListOptions): Promise<void> {
  const target = locate(options.config, options.socket);
  const request = { command: 'list', messages: options.messages === true, ...(options.queue !== undefined ? { queue: options.queue } : {}), ...(options.id !== undefined ? { id: options.id } : {}) };
  const { queues, histories = [] } = resultOf(await ask(target, request), 2) as { queues: QueueView[]; histories?: HistoryView[] };
  if (options.json) return printJson({ queues, histories });
  if (histories.length > 0) {
    const age = (at: number | null) => (at === null ? '-' : `${Math.max(0, Math.round((Date.now() - at) / 1000))} s`);
    print(table(['HISTORY', 'MESSAGES', 'BYTES', 'OLDEST'], histories.map((h) => [h.queue, h.messages, h.bytes, age(h.oldestAcceptedAt)])) + '\n');
  }
  if (queues.length === 0) {
    const what = options.queue ? `queue ${options.queue}${options.id !== undefined ? ` id ${options.id}` : ''}` : options.id !== undefined ? `id ${options.id}` : 'queue';
    return print(`no ${safe(what)} holds messages on this broker\n`);
  }
  print(table(['QUEUE', 'MESSAGES', 'WAITING', 'IN FLIGHT', 'IDS'], queues.map((q) => [q.queue, q.messages, q.waiting, q.inFlight, q.idCount])));
  for (const q of queues) {
    if (q.ids && q.ids.length > 0) {
      print(`\n${safe(q.queue)}: ids\n`);
      print(table(['ID', 'MESSAGES'], q.ids.map((i) => [i.id, i.count])));
      if (q.idsTruncated) print('(first 1000 ids only)\n');
    }
    if (q.messageList) {
      print(`\n${safe(q.queue)}: messages\n`);
      const rows = q.messageList.map((m) => [
        m.messageId,
        m.id,
        new Date(m.created).toISOString(),
        m.from,
        Math.max(0, ...m.groups.map((g) => g.nbRequeues)),
        m.waitingForSubscriber ? 'no subscriber yet' : m.groups.map((g) => g.state).join(',') || '-',
      ]);
      print(table(['MESSAGE ID', 'ID', 'CREATED', 'FROM', 'REQUEUES', 'STATE'], rows));
      if (q.messagesTruncated) print('(first 1000 messages only)\n');
    }
  }
}

export interface DeleteOptions extends ControlOptions {
  readonly queue?: string | undefined;
  readonly id?: string | undefined;
  readonly yes?: boolean | undefined;
  /** the channel's retained history instead of its queue */
  readonly history?: boolean | undefined;
}

interface HistoryView {
  readonly queue: string;
  readonly messages: number;
  readonly bytes: number;
  readonly oldestAcceptedAt: number | null;
}

/** `whisker delete -q endpoint/version [-i id] --yes`: empties; subscriptions stay */
export async function runDelete(options: DeleteOptions): Promise<void> {
  if (!options.queue) throw new CommandError('delete needs -q endpoint/version', 2);
  if (options.history) {
    if (!options.yes) throw new CommandError(`delete --history drops the whole retained history of ${options.queue}: add --yes to do it`, 2);
    const result = resultOf(await ask(locate(options.config, options.socket), { command: 'delete', queue: options.queue, history: true }), 2) as { freedBytes: number };
    if (options.json) return print(JSON.stringify(result) + '\n');
    return print(`deleted the history of ${options.queue} (${result.freedBytes} bytes)\n`);
  }
  const what = `${options.queue}${options.id !== undefined ? ` id ${options.id}` : ' (every id)'}`;
  // no prompt: scripts and terminals alike must say --yes
  if (!options.yes) throw new CommandError(`delete drops every message of ${what}, in flight or not: add --yes to do it`, 2);
  const target = locate(options.config, options.socket);
  const request = { command: 'delete', queue: options.queue, ...(options.id !== undefined ? { id: options.id } : {}) };
  const result = resultOf(await ask(target, request), 2) as { deleted: number };
  if (options.json) return printJson(result);
  print(`deleted ${result.deleted} messages from ${safe(what)}\n`);
}
