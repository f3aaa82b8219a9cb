import { ChannelCache } from '../../protocol/channel.js';
import { type ErrorPayload, WhiskerError } from '../../protocol/errors.js';
import type { PublishedMessage, PublishResult } from '../../protocol/frames.js';
import type { Cluster } from '../cluster/cluster.js';
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
  /** with a `cluster` block: a queue of another set is E_MOVED, one not placed yet is placed first */
  readonly #cluster: Cluster | null;

  constructor(router: Router, lifecycle: Lifecycle, cluster: Cluster | null = null) {
    this.#router = router;
    this.#lifecycle = lifecycle;
    this.#cluster = cluster;
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
    /** cluster: queues of this batch not placed yet; placed (once each) after rules and format passed */
    const unplaced = new Set<string>();
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
        accepted.push({ index, message: this.#check(clientName, m, now, creates, unplaced) });
        firstCopy.set(m.messageId, index);
      } catch (error) {
        results[index] = { messageId: m.messageId, error: toPayload(error) };
      }
    });
    if (unplaced.size > 0) await this.#place(unplaced, accepted, results);
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

  /**
   * Places each queue once (SPEC §13): the messages of a queue placed on another set, or that
   * could not be placed, are answered with that error and leave `accepted`.
   */
  async #place(queues: ReadonlySet<string>, accepted: Candidate[], results: PublishResult[]): Promise<void> {
    const cluster = this.#cluster!;
    const refused = new Map<string, ErrorPayload>();
    await Promise.all(
      [...queues].map((queue) =>
        cluster.place(queue).then(
          (set) => void (set !== cluster.set && refused.set(queue, cluster.moved(set, queue).toJSON())),
          (error: unknown) => void refused.set(queue, toPayload(error)),
        ),
      ),
    );
    if (refused.size === 0) return;
    const kept = accepted.filter(({ index, message }) => {
      const error = refused.get(message.queue);
      if (!error) return true;
      results[index] = { messageId: message.messageId, error };
      this.#unpend(message.queue);
      return false;
    });
    accepted.splice(0, accepted.length, ...kept);
  }

  #check(clientName: string, m: PublishedMessage, now: number, creates: Set<string>, unplaced: Set<string>): StoredMessage {
    if (!this.#lifecycle.isRunning) throw new WhiskerError('E_STOPPING', 'Broker is stopping');
    const router = this.#router;
    if (!router.isStoreHealthy) throw new WhiskerError('E_STORE', 'Message store unavailable');
    const channel = this.#channels.parse(m.channel);
    const cluster = this.#cluster;
    let toPlace = false;
    if (cluster) {
      // the hot path of a cluster: one Map lookup (a queue of another set is checked there)
      const owner = cluster.owner(channel.queue);
      if (owner === undefined) toPlace = true;
      else if (owner !== cluster.set) {
        // sent again once this broker's map names its set, it keeps its place (moving.ts `refused`)
        router.moving.refused(m.messageId, channel.queue);
        throw cluster.moved(owner, channel.queue);
      }
    }
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
    if (toPlace) unplaced.add(queue); // rules and format passed: it may be placed (SPEC §13)
    // the queue's own name string, not one more copy per waiting message
    return makeStoredMessage(router.moving.resentSeq(m.messageId, queue) ?? router.nextSeq(), { messageId: m.messageId, queue: held?.name ?? queue, id: channel.id, data, created: m.created, acceptedAt: now, from: clientName });
  }
  #unpend(queue: string): void {
    const left = (this.#pending.get(queue) ?? 1) - 1;
    if (left > 0) this.#pending.set(queue, left);
    else this.#pending.delete(queue);
  }
}

function tooDeep(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  // a body of one level (most are) is looked at in place: no stack, no Object.values array
  if (limit >= 1 && isFlat(value)) return false;
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

/** no value of this object or array is an object or array */
function isFlat(value: object): boolean {
  if (Array.isArray(value)) {
    for (const child of value) if (typeof child === 'object' && child !== null) return false;
    return true;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const child = (value as Record<string, unknown>)[key];
    if (typeof child === 'object' && child !== null) return false;
  }
  return true;
}

function toPayload(error: unknown): ErrorPayload {
  if (error instanceof WhiskerError) return error.toJSON();
  return new WhiskerError('E_STORE', 'Internal error').toJSON();
}
