import { createHash } from 'node:crypto';
import { parseChannel, queueName } from '../../protocol/channel.js';
import type { Logger } from '../../runtime/logger.js';
import { makeStoredMessage, type StoredMessage } from '../store/store.js';

/** what dead letters need of the broker's messages (the Router is one) */
export interface DeadLetterPort {
  append(messages: readonly StoredMessage[]): Promise<void>;
  readBodies(messageIds: readonly string[]): Promise<ReadonlyArray<unknown>>;
  /** a stored dead letter enters its queue (and the mirrors' feed) */
  accept(message: StoredMessage): void;
  nextSeq(): number;
  now(): number;
  readonly log: Logger;
}

/**
 * A message delivered `requeueLimit` times in a group becomes a new message on the channel's
 * dead-letter channel, wrapped in an envelope (docs/protocol.md#dead-letters).
 */
export class DeadLetters {
  readonly #port: DeadLetterPort;

  constructor(port: DeadLetterPort) {
    this.#port = port;
  }

  /** the envelope keeps where the message came from and why it died */
  send(target: string, original: StoredMessage, group: string, nbDeliveries: number, reason: string): void {
    const port = this.#port;
    if (original.data === undefined) {
      // a mirror's record that never came near delivery here: its body is on disk (asked now, before the settle is recorded)
      port.readBodies([original.messageId]).then(
        ([data]) => this.send(target, { ...original, data: data ?? null }, group, nbDeliveries, reason),
        (error: unknown) => port.log.error('dead letter lost: its body could not be read', { messageId: original.messageId, error: (error as Error).message }),
      );
      return;
    }
    const channel = parseChannel(target); // checked when the config was compiled
    const message = makeStoredMessage(port.nextSeq(), {
      // the same id on every mirror, one per failed group, within the wire's 128 characters
      messageId: createHash('sha256').update(`${original.messageId}\n${group}`).digest('hex').slice(0, 32),
      queue: queueName(channel),
      id: channel.id,
      data: { channel: `${original.queue}/${original.id}`, messageId: original.messageId, nbDeliveries, lastError: reason, from: original.from, created: original.created, data: original.data },
      created: original.created,
      acceptedAt: port.now(),
      from: original.from,
    });
    port.log.warn('message dead-lettered', { queue: original.queue, messageId: original.messageId, group, target, nbDeliveries, reason });
    this.#store(message, 0);
  }

  /** the original is already settled: keep trying until the dead letter is stored */
  #store(message: StoredMessage, attempt: number): void {
    const port = this.#port;
    port.append([message]).then(
      () => port.accept(message),
      (error: unknown) => {
        port.log.error('dead letter not stored yet, retrying', { messageId: message.messageId, attempt, error: (error as Error).message });
        setTimeout(() => this.#store(message, attempt + 1), Math.min(30_000, 500 * 2 ** attempt)).unref();
      },
    );
  }
}
