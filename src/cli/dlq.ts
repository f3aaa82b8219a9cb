import { ask, CommandError, locate, resultOf } from './control-client.js';
import type { ControlOptions } from './lifecycle.js';
import { table } from './table.js';
import { body, safe, time } from './text.js';

const print = (text: string): void => void process.stdout.write(text);

export interface DlqOptions extends ControlOptions {
  readonly queue?: string | undefined;
  readonly limit?: string | undefined;
  readonly all?: boolean | undefined;
  readonly yes?: boolean | undefined;
}

interface DeadLetters {
  queues: Array<{ queue: string; size: number }>;
  queue: string | null;
  bodies: boolean;
  truncated: boolean;
  messages: Array<{ messageId: string; deadAt: number; original: { channel: string; messageId: string; from: string; nbDeliveries: number; lastError: string } | null; data?: unknown }>;
}

/**
 * `whisker dlq list [-q QUEUE] [-n N]`, `dlq replay -q QUEUE (MESSAGE_ID... | --all)`,
 * `dlq purge -q QUEUE (MESSAGE_ID... | --all) --yes` (docs/operations.md#dead-letters).
 */
export async function runDlq(action: string | undefined, messageIds: readonly string[], options: DlqOptions): Promise<void> {
  const target = locate(options.config, options.socket);
  switch (action) {
    case 'list': {
      const limit = options.limit === undefined ? 20 : Number(options.limit);
      const view = resultOf(await ask(target, { command: 'dlq-list', ...(options.queue ? { queue: options.queue } : {}), limit }), 2) as DeadLetters;
      if (options.json) return print(JSON.stringify(view) + '\n');
      if (view.queues.length === 0) return print('no channel has a deadLetter in the config\n');
      print(table(['DEAD-LETTER QUEUE', 'MESSAGES'], view.queues.map((q) => [q.queue, q.size])));
      if (view.queue === null || view.messages.length === 0) return;
      print(`\n${safe(view.queue)}: oldest first\n`);
      const header = ['MESSAGE ID', 'DEAD AT', 'FROM CHANNEL', 'SENDER', 'DELIVERIES', 'LAST ERROR', ...(view.bodies ? ['DATA'] : [])];
      print(table(header, view.messages.map((m) => [
        m.messageId, time(m.deadAt), m.original?.channel ?? '(not an envelope)', m.original?.from ?? '-', m.original?.nbDeliveries ?? '-', m.original?.lastError ?? '-',
        ...(view.bodies ? [body(m.data)] : []),
      ])));
      if (view.truncated) print(`(first ${view.messages.length} only: -n N for more)\n`);
      return;
    }
    case 'replay': {
      const queue = needQueue(options);
      if (!options.all && messageIds.length === 0) throw new CommandError('dlq replay needs message ids, or --all', 2);
      const result = resultOf(await ask(target, { command: 'dlq-replay', queue, ...(options.all ? { all: true } : { messageIds }) }, { timeoutMs: 120_000 }), 2) as {
        replayed: Array<{ messageId: string; newMessageId: string; channel: string }>;
        failed: Array<{ messageId: string; code: string; reason: string }>;
      };
      if (options.json) return print(JSON.stringify(result) + '\n');
      for (const r of result.replayed) print(`replayed ${r.messageId} to ${safe(r.channel)} as ${r.newMessageId}\n`);
      for (const f of result.failed) print(`not replayed ${safe(f.messageId)}: ${f.code} ${safe(f.reason)}\n`);
      print(`${result.replayed.length} replayed, ${result.failed.length} not\n`);
      if (result.failed.length > 0) throw new CommandError(`${result.failed.length} dead letters were not replayed (they stay)`, 1);
      return;
    }
    case 'purge': {
      const queue = needQueue(options);
      if (!options.all && messageIds.length === 0) throw new CommandError('dlq purge needs message ids, or --all', 2);
      if (!options.yes) throw new CommandError(`dlq purge drops ${options.all ? `every dead letter of ${queue}` : `${messageIds.length} dead letters`} for good: add --yes to do it`, 2);
      const result = resultOf(await ask(target, { command: 'dlq-purge', queue, ...(options.all ? { all: true } : { messageIds }) }), 2) as { purged: number };
      if (options.json) return print(JSON.stringify(result) + '\n');
      print(`purged ${result.purged} dead letters from ${safe(queue)}\n`);
      return;
    }
    default:
      throw new CommandError('dlq needs "list", "replay" or "purge"', 2);
  }
}

function needQueue(options: DlqOptions): string {
  if (!options.queue) throw new CommandError('needs -q QUEUE, the dead-letter queue (endpoint/version)', 2);
  return options.queue;
}
