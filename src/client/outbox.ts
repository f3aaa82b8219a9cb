import { WhiskerError } from '../protocol/errors.js';
import type { PublishedMessage } from '../protocol/frames.js';
import type { Channel, SendCallback, SendInfo } from './types.js';

export interface PendingSend {
  readonly message: PublishedMessage;
  readonly bytes: number;
  readonly channel: Channel;
  /** `endpoint/version`: where a cluster routes it */
  readonly queue: string;
  /** brokers (by object) that answered this send */
  readonly answeredBy: Set<object>;
  /** serviceIds of the slaves that stored it */
  readonly storedBy: Set<string>;
  readonly cb: SendCallback;
  readonly stopAbort: () => void;
}

const SWEEP_MS = 100;

/**
 * Sends waiting for the master's answer (SPEC §3): bounded by `maxBufferedMessages`, failed with
 * E_NO_MASTER at `sendTimeout`, E_ABORTED when their signal aborts, E_DISCONNECTED at disconnect().
 */
export class Outbox {
  readonly #pending = new Map<string, PendingSend>();
  #sweeper: NodeJS.Timeout | null = null;
  /** read at each sweep: sends made before connect() get the timeout connect() sets */
  readonly #sendTimeoutMs: () => number;

  constructor(sendTimeoutMs: () => number) {
    this.#sendTimeoutMs = sendTimeoutMs;
  }

  get size(): number {
    return this.#pending.size;
  }

  values(): IterableIterator<PendingSend> {
    return this.#pending.values();
  }

  get(messageId: string): PendingSend | undefined {
    return this.#pending.get(messageId);
  }

  add(message: PublishedMessage, bytes: number, channel: Channel, cb: SendCallback, signal: AbortSignal | undefined): PendingSend {
    const onAbort = () => this.settle(message.messageId, new WhiskerError('E_ABORTED', 'Send aborted: the message may still have been stored'));
    signal?.addEventListener('abort', onAbort, { once: true });
    const pending: PendingSend = {
      message,
      bytes,
      channel,
      queue: `${channel.endpoint}/${channel.version}`,
      answeredBy: new Set(),
      storedBy: new Set(),
      cb,
      stopAbort: () => signal?.removeEventListener('abort', onAbort),
    };
    this.#pending.set(message.messageId, pending);
    this.#armSweeper();
    return pending;
  }

  /** the send's outcome: removed, and its callback called once */
  settle(messageId: string, error: WhiskerError | null): void {
    const pending = this.#pending.get(messageId);
    if (!pending) return;
    this.#pending.delete(messageId);
    pending.stopAbort();
    const info: SendInfo = { messageId, channel: pending.channel };
    // E_NO_MASTER always says who stored it: `[]` when no broker did (docs/configuration.md)
    if (error && (pending.storedBy.size > 0 || error.code === 'E_NO_MASTER')) info.storedBy = [...pending.storedBy];
    pending.cb(error, null, info);
  }

  failAll(error: WhiskerError): void {
    for (const messageId of [...this.#pending.keys()]) this.settle(messageId, error);
    this.#stopSweeper();
  }

  #armSweeper(): void {
    if (this.#sweeper) return;
    this.#sweeper = setInterval(() => this.#sweep(), SWEEP_MS);
  }

  #stopSweeper(): void {
    if (this.#sweeper) clearInterval(this.#sweeper);
    this.#sweeper = null;
  }

  /** sends still unanswered by a master at their deadline fail with E_NO_MASTER (SPEC §3) */
  #sweep(): void {
    const now = Date.now();
    const timeoutMs = this.#sendTimeoutMs();
    for (const [messageId, pending] of this.#pending) {
      if (pending.message.created + timeoutMs > now) continue;
      this.settle(messageId, new WhiskerError('E_NO_MASTER', 'No master broker answered in time'));
    }
    if (this.#pending.size === 0) this.#stopSweeper();
  }
}
