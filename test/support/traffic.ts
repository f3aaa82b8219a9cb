import type { WhiskerClient } from '../../src/client/client.js';
import type { WhiskerError } from '../../src/protocol/errors.js';
import { connect, until } from './harness.js';

/**
 * The checker of the failover tests: a producer at a steady pace and consumers that ack, with
 * the client's dedupe off so that every redelivery is counted. What a user would count: sent,
 * lost (stored and never consumed), delivered twice, and when each message was first consumed.
 */
export class Traffic {
  readonly consumers: WhiskerClient[] = [];
  readonly inFlightWindow: number;
  /** seq -> times consumed */
  readonly deliveries = new Map<number, number>();
  /** seq -> performance.now() when sent, and when first consumed */
  readonly sentAt = new Map<number, number>();
  readonly consumedAt = new Map<number, number>();
  /** performance.now() of every delivery, redeliveries included */
  readonly deliveredAt: number[] = [];
  readonly succeeded = new Set<number>();
  readonly storedBySlave = new Set<number>();
  readonly failed: string[] = [];
  /** deliver or results frames the clients ignored: from a broker of an older epoch */
  stale = 0;
  sent = 0;
  #producer!: WhiskerClient;
  #sends: Array<Promise<void>> = [];
  #pacer: NodeJS.Timeout | null = null;

  private constructor(inFlightWindow: number) {
    this.inFlightWindow = inFlightWindow;
  }

  /** sendTimeout: the producer's, 30 s unless given */
  static async start(hosts: string[], options: { consumers: number; prefetch: number; channel?: `${string}/${string}/${string}`; sendTimeout?: number }): Promise<Traffic> {
    const traffic = new Traffic(options.consumers * options.prefetch);
    const channel = options.channel ?? 'orders/v1/1';
    for (let i = 0; i < options.consumers; i++) {
      const consumer = await connect(`election-worker-${i}`, hosts, { dedupeWindow: 0 });
      consumer.on('stale', () => traffic.stale++);
      await consumer.consume(channel, { prefetch: options.prefetch }, (err, msg, done) => {
        if (err) throw err;
        const seq = (msg as { seq: number }).seq;
        traffic.deliveries.set(seq, (traffic.deliveries.get(seq) ?? 0) + 1);
        if (!traffic.consumedAt.has(seq)) traffic.consumedAt.set(seq, performance.now());
        traffic.deliveredAt.push(performance.now());
        done!();
      }).ready;
      traffic.consumers.push(consumer);
    }
    traffic.#producer = await connect('election-producer', hosts, { sendTimeout: options.sendTimeout ?? 30_000 });
    traffic.#producer.on('stale', () => traffic.stale++);
    return traffic;
  }

  get clients(): WhiskerClient[] {
    return [this.#producer, ...this.consumers];
  }

  /** sends `perTick` messages every 5 ms until stopped */
  run(perTick: number): void {
    this.#pacer ??= setInterval(() => {
      for (let i = 0; i < perTick; i++) this.#send(this.sent++);
    }, 5);
  }

  pause(): void {
    if (this.#pacer) clearInterval(this.#pacer);
    this.#pacer = null;
  }

  /** resolves when `count` more messages were sent */
  async sendMore(count: number, timeoutMs = 30_000): Promise<void> {
    const target = this.sent + count;
    await until(() => this.sent >= target, timeoutMs, `${count} more messages sent`);
  }

  /** ms from `since` to the first consumption of a message sent after it */
  async firstConsumedAfter(since: number, timeoutMs: number, what: string): Promise<number> {
    let first = Infinity;
    await until(
      () => {
        for (const [seq, at] of this.consumedAt) if (at > since && (this.sentAt.get(seq) ?? 0) > since) first = Math.min(first, at);
        return first < Infinity;
      },
      timeoutMs,
      what,
    );
    return first - since;
  }

  /** stops sending, waits for every answer and for every stored message to be consumed */
  async settle(timeoutMs = 30_000): Promise<{ sent: number; lost: number; duplicated: number }> {
    this.pause();
    await Promise.all(this.#sends);
    const owed = [...this.succeeded, ...this.storedBySlave];
    await until(() => owed.every((seq) => this.deliveries.has(seq)), timeoutMs, `every stored message consumed (${owed.filter((seq) => !this.deliveries.has(seq)).length} missing)`);
    await new Promise((resolve) => setTimeout(resolve, 500)); // redeliveries still on their way are counted too
    const lost = owed.filter((seq) => !this.deliveries.has(seq)).length;
    const duplicated = [...this.deliveries.values()].reduce((sum, n) => sum + n - 1, 0);
    return { sent: this.sent, lost, duplicated };
  }

  async close(): Promise<void> {
    this.pause();
    await Promise.all(this.clients.map((client) => client.disconnect()));
  }

  #send(seq: number): void {
    this.sentAt.set(seq, performance.now());
    this.#sends.push(
      new Promise<void>((resolve) =>
        this.#producer.send('orders/v1/1', { seq }, (err: WhiskerError | null, _: unknown, info?: { storedBy?: string[] }) => {
          if (!err) this.succeeded.add(seq);
          else if (info?.storedBy?.length) this.storedBySlave.add(seq);
          else this.failed.push(`${seq}: ${err.code}`);
          resolve();
        }),
      ),
    );
  }
}
