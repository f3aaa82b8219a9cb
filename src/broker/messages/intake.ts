import { ChannelCache } from '../../protocol/channel.js';
import { type ErrorPayload, WhiskerError } from '../../protocol/errors.js';
import type { PublishedMessage, PublishResult } from '../../protocol/frames.js';
import type { Lifecycle } from '../lifecycle.js';
import { makeStoredMessage, type StoredMessage } from '../store/store.js';
import type { Router } from './router.js';

interface Candidate {
  readonly index: number;
  readonly message: StoredMessage;
}

/** JSON.parse takes any depth, JSON.stringify does not: a deep value would crash delivery */
const MAX_DEPTH = 256;

/**
 * A client's publish frame on its way in (SPEC §7): rules -> format -> dedupe -> store ->
 * queue, one result per message, in order. Refused with E_STOPPING once the broker drains.
 */
export class Intake {
  readonly #router: Router;
  readonly #lifecycle: Lifecycle;
  /** strict: no control characters in the ids clients send to (SPEC §2) */
  readonly #channels = new ChannelCache(1024, true);
  /** per queue, sends checked and not yet queued (being stored): `overflow: reject` counts them */
  readonly #pending = new Map<string, number>();

  constructor(router: Router, lifecycle: Lifecycle) {
    this.#router = router;
    this.#lifecycle = lifecycle;
  }

  async publish(clientName: string, messages: readonly PublishedMessage[]): Promise<PublishResult[]> {
    const router = this.#router;
    const results: PublishResult[] = messages.map((m) => ({ messageId: m.messageId }));
    const accepted: Candidate[] = [];
    const waits: Promise<void>[] = [];
    /** a frame may carry an id twice (a retry batched with its original): one is stored */
    const firstCopy = new Map<string, number>();
    const copies: Array<[index: number, first: number]> = [];
    /** queues this batch would make: counted against limits.maxQueues before anything is stored */
    const creates = new Set<string>();
    const now = router.now();
    messages.forEach((m, index) => {
      try {
        const first = firstCopy.get(m.messageId);
        if (first !== undefined) {
          copies.push([index, first]);
          return;
        }
        const inFlight = router.appendUnderWay(m.messageId);
        if (inFlight) {
          waits.push(inFlight.then(() => undefined, (error: unknown) => { results[index] = { messageId: m.messageId, error: toPayload(error) }; }));
          return;
        }
        if (router.isKnown(m.messageId)) return;
        accepted.push({ index, message: this.#check(clientName, m, now, creates) });
        firstCopy.set(m.messageId, index);
      } catch (error) {
        results[index] = { messageId: m.messageId, error: toPayload(error) };
      }
    });
    if (accepted.length > 0) {
      try {
        await router.store(accepted.map((c) => c.message), true);
      } catch (error) {
        router.log.error('store append failed', { error: (error as Error).message, messages: accepted.length });
        const payload = new WhiskerError('E_STORE', 'Message could not be stored').toJSON();
        for (const { index } of accepted) results[index] = { messageId: results[index]!.messageId, error: payload };
      } finally {
        for (const { message } of accepted) this.#unpend(message.queue);
      }
    }
    if (waits.length > 0) await Promise.all(waits);
    for (const [index, first] of copies) results[index] = results[first]!;
    return results;
  }

  #check(clientName: string, m: PublishedMessage, now: number, creates: Set<string>): StoredMessage {
    if (!this.#lifecycle.isRunning) throw new WhiskerError('E_STOPPING', 'Broker is stopping');
    const router = this.#router;
    if (!router.isStoreHealthy) throw new WhiskerError('E_STORE', 'Message store unavailable');
    const channel = this.#channels.parse(m.channel);
    if (m.data === null || m.data === undefined) throw new WhiskerError('E_NO_VALUE', 'Bad format');
    if (tooDeep(m.data, MAX_DEPTH)) throw new WhiskerError('E_TOO_LARGE', `Message nested deeper than ${MAX_DEPTH} levels`);
    const policy = router.policy;
    if (!policy.rules.canWrite(clientName, channel.endpoint, channel.version, channel.id)) throw router.refusals.forbidden(clientName, m.channel, 'write', 'no-rule');
    const queue = channel.queue;
    let data: unknown = m.data;
    const format = policy.format(queue);
    if (format) {
      const result = format.check(data);
      if (!result.ok) throw new WhiskerError('E_SCHEMA', 'Bad format', result.details);
      data = result.value;
    }
    const held = router.queues.get(queue);
    const pending = this.#pending.get(queue) ?? 0;
    if (held) held.checkCapacity(pending);
    else {
      const settings = policy.queueSettings(queue);
      if (settings.overflow === 'reject' && pending >= settings.maxItems) throw new WhiskerError('E_QUEUE_FULL', 'Queue is full');
    }
    if (!held && !creates.has(queue)) {
      router.checkQueueLimit(creates.size);
      creates.add(queue);
    }
    this.#pending.set(queue, pending + 1);
    // the queue's own name string, not one more copy per waiting message
    return makeStoredMessage(router.nextSeq(), { messageId: m.messageId, queue: held?.name ?? queue, id: channel.id, data, created: m.created, acceptedAt: now, from: clientName });
  }
  #unpend(queue: string): void {
    const left = (this.#pending.get(queue) ?? 1) - 1;
    if (left > 0) this.#pending.set(queue, left);
    else this.#pending.delete(queue);
  }
}

function tooDeep(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (typeof item !== 'object' || item === null) continue;
    if (depth > limit) return true;
    for (const child of Array.isArray(item) ? item : Object.values(item)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}

function toPayload(error: unknown): ErrorPayload {
  if (error instanceof WhiskerError) return error.toJSON();
  return new WhiskerError('E_STORE', 'Internal error').toJSON();
}
