import { createHash } from 'node:crypto';
import { ChannelCache, parseChannel, queueName, WILDCARD } from '../../protocol/channel.js';
import { type ErrorPayload, WhiskerError } from '../../protocol/errors.js';
import type { PeerMessage, PeerSettlement, PublishedMessage, PublishResult, RefusedId } from '../../protocol/frames.js';
import type { Logger } from '../../ops/logger.js';
import { DedupeWindow } from '../../protocol/dedupe.js';
import { Appends } from './appends.js';
import { Unconfirmed } from '../mirror/unconfirmed.js';
import type { Policy } from '../access/policy.js';
import { Queue } from '../queue/queue.js';
import type { MessageStore, StoreEvent, StoredMessage } from '../store/store.js';
import type { Subscription } from '../queue/subscription.js';

const forbidden = () => new WhiskerError('E_FORBIDDEN', 'Not allowed');

/** what a master's mirrors learn from it (docs/protocol.md#peers) */
export interface ReplicationObserver {
  settled(events: readonly StoreEvent[]): void;
  /** a message this master now holds: accepted from a client, or a dead letter it made */
  made(message: StoredMessage): void;
}

interface Candidate {
  readonly index: number;
  readonly message: StoredMessage;
}

/**
 * The broker's queues and the path of a message into them (SPEC §7):
 * rules -> format -> dedupe -> store -> queue. Also owns reserved ids (SPEC §5).
 */
export class Router {
  #policy: Policy;
  readonly #store: MessageStore;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #queues = new Map<string, Queue>();
  readonly #dedupe: DedupeWindow;
  readonly #appends = new Appends();
  /** on a slave in step with its master: client messages the master has not named yet */
  readonly unconfirmed = new Unconfirmed();
  readonly #reservations = new Map<string, Subscription>();
  readonly #channels = new ChannelCache();
  #isMaster: boolean;
  #observer: ReplicationObserver | null = null;
  /** what the queues see of the store: every state change also reaches the mirrors' feed */
  readonly #queueStore: MessageStore;
  #stopping = false;
  #draining = false;
  #seq = 0;

  constructor(policy: Policy, store: MessageStore, log: Logger, now: () => number) {
    this.#policy = policy;
    this.#store = store;
    this.#log = log;
    this.#now = now;
    this.#isMaster = policy.config.isMaster;
    this.#dedupe = new DedupeWindow(policy.config.dedupeWindow * 1000, now);
    this.#queueStore = {
      load: () => store.load(),
      append: (messages) => store.append(messages),
      record: (events) => {
        store.record(events);
        this.#observer?.settled(events);
      },
      readsBodies: store.readsBodies,
      readBodies: (messageIds) => store.readBodies(messageIds),
      isHealthy: () => store.isHealthy(),
      close: () => store.close(),
    };
  }

  observe(observer: ReplicationObserver | null): void {
    this.#observer = observer;
  }

  // ---- mirrors (SPEC §9) ---------------------------------------------------------------

  /**
   * What a mirror that follows this master needs first: what is held, and what was settled.
   * Bodies left on disk are read with `withBodies`, a chunk at a time.
   */
  snapshot(): { messages: StoredMessage[]; removed: string[] } {
    const messages: StoredMessage[] = [];
    for (const queue of this.#queues.values()) for (const m of queue.heldMessages()) messages.push(m);
    const removed: string[] = [];
    for (const messageId of this.#dedupe.ids()) if (!this.#holding(messageId)) removed.push(messageId);
    return { messages, removed };
  }

  /**
   * The messages as a mirror gets them, bodies read back from the store where a queue left them
   * on disk; one settled meanwhile is left out (its removal follows in the feed).
   */
  async withBodies(messages: readonly StoredMessage[]): Promise<PeerMessage[]> {
    const cold = messages.filter((m) => m.data === undefined);
    const bodies = cold.length > 0 ? await this.#store.readBodies(cold.map((m) => m.messageId)) : [];
    const read = new Map(cold.map((m, i) => [m, bodies[i]]));
    const peerMessages: PeerMessage[] = [];
    for (const m of messages) {
      const data = m.data ?? read.get(m);
      if (data !== undefined) peerMessages.push({ ...toPeerMessage(m), data });
    }
    return peerMessages;
  }

  /** messages a master holds: stored and queued here unless already known */
  async applyPeerMessages(messages: readonly PeerMessage[]): Promise<void> {
    const fresh: StoredMessage[] = [];
    const seen = new Set<string>();
    for (const m of messages) {
      this.unconfirmed.confirm(m.messageId);
      if (seen.has(m.messageId) || this.#dedupe.has(m.messageId) || this.#appends.of(m.messageId) || this.#holding(m.messageId)) continue;
      seen.add(m.messageId);
      fresh.push({ seq: ++this.#seq, messageId: m.messageId, queue: m.queue, id: m.id, data: m.data, created: m.created, acceptedAt: m.acceptedAt, from: m.from });
    }
    if (fresh.length === 0) return;
    await this.#appends.run(fresh, (ms) => this.#store.append(ms), () => this.#admit(fresh, false));
  }

  /** the master's settlements: the same records are settled here */
  applyPeerSettled(settled: readonly PeerSettlement[], removed: readonly string[]): void {
    for (const { messageId, group } of settled) {
      this.unconfirmed.confirm(messageId);
      const queue = this.#holding(messageId);
      if (queue) queue.settleFromPeer(messageId, group);
      else this.#whenStored(messageId, () => this.#holding(messageId)?.settleFromPeer(messageId, group));
    }
    for (const messageId of removed) {
      this.unconfirmed.confirm(messageId);
      const queue = this.#holding(messageId);
      if (queue) queue.forgetFromPeer(messageId);
      // a copy still on its way from the client, or being stored, is then not queued (SPEC §7)
      else this.#dedupe.add(messageId);
    }
  }

  /**
   * Stored: queued, unless the master finished with it while it was being written (it is then
   * in the dedupe window already: only applyPeerSettled puts an id there during its append).
   */
  #admit(messages: readonly StoredMessage[], fromClient: boolean): void {
    const finished: StoreEvent[] = [];
    for (const message of messages) {
      if (this.#dedupe.has(message.messageId)) {
        if (!this.#holding(message.messageId)) finished.push({ kind: 'remove', messageId: message.messageId });
        continue;
      }
      this.#dedupe.add(message.messageId);
      // a mirror may not hear it from the client (not reconnected yet): it hears it from us,
      // before the queue takes it (a queue past its window of bodies drops this one's body)
      if (this.#isMaster) this.#observer?.made(message);
      else if (fromClient) this.unconfirmed.stored(message.messageId, message.acceptedAt);
      this.#queue(message.queue).accept(message);
      this.#appends.admitted(message.messageId);
    }
    if (finished.length > 0) this.#store.record(finished);
  }

  /** a slave can hear of an ack before the message's own append completed: apply it after */
  #whenStored(messageId: string, settle: () => void): void {
    if (!this.#isMaster) this.#appends.afterAdmit(messageId, settle);
  }

  /**
   * Messages held here that the master's sync did not name, accepted within the dedupe window
   * (less a margin for the two clocks): the master would remember settling any of those, so it
   * never had them (a send answered E_NO_MASTER, SPEC §3). Older ones it may have settled and
   * forgotten: they stay here, counted in `older`.
   */
  async heldOnlyHere(named: ReadonlySet<string>): Promise<{ messages: PeerMessage[]; older: number }> {
    const acceptedSince = this.#now() - this.#dedupe.windowMs + CLOCK_MARGIN_MS;
    const messages: StoredMessage[] = [];
    let older = 0;
    for (const queue of this.#queues.values()) {
      for (const m of queue.heldMessages()) {
        if (named.has(m.messageId)) continue;
        if (m.acceptedAt >= acceptedSince) messages.push(m);
        else older++;
      }
    }
    return { messages: await this.withBodies(messages), older };
  }

  /** client messages the master has not named within `ageMs`: it never got them (we offer them) */
  async takeUnconfirmed(ageMs: number): Promise<PeerMessage[]> {
    const ids = this.unconfirmed.takeStoredBefore(this.#now() - ageMs);
    if (ids.size === 0) return [];
    const messages: StoredMessage[] = [];
    for (const messageId of ids) {
      const message = this.#holding(messageId)?.message(messageId);
      if (message) messages.push(message);
    }
    return this.withBodies(messages);
  }

  #holding(messageId: string): Queue | undefined {
    for (const queue of this.#queues.values()) if (queue.has(messageId)) return queue;
    return undefined;
  }

  get queues(): ReadonlyMap<string, Queue> {
    return this.#queues;
  }

  get isMaster(): boolean {
    return this.#isMaster;
  }

  async restore(): Promise<number> {
    const { messages, recent } = await this.#store.load();
    for (const { messageId, acceptedAt } of recent) this.#dedupe.addAt(messageId, acceptedAt);
    for (const item of messages) {
      this.#seq = Math.max(this.#seq, item.message.seq);
      this.#queue(item.message.queue).restore(item);
      this.#dedupe.addAt(item.message.messageId, item.message.acceptedAt);
    }
    for (const queue of this.#queues.values()) queue.finishRestore();
    return messages.length;
  }

  applyPolicy(policy: Policy): void {
    this.#policy = policy;
    this.#dedupe.windowMs = policy.config.dedupeWindow * 1000;
    for (const queue of this.#queues.values()) queue.updateSettings(policy.queueSettings(queue.name));
  }

  /** the role this broker acts in, decided by its config and its peers (src/broker/peers.ts) */
  setMaster(isMaster: boolean): void {
    this.#isMaster = isMaster;
    for (const queue of this.#queues.values()) queue.setDelivering(isMaster);
  }

  /** soft-stop: new sends are refused with E_STOPPING */
  refuseSends(): void {
    this.#stopping = true;
  }

  get isRefusingSends(): boolean {
    return this.#stopping;
  }

  /** soft-stop: sends refused, deliveries in flight finish, no new one starts (SPEC §9) */
  drain(): void {
    this.refuseSends();
    this.#draining = true;
    for (const queue of this.#queues.values()) queue.drain();
  }

  /** deliveries handed out and not yet acked, nacked or timed out, over every queue */
  get inFlightCount(): number {
    let count = 0;
    for (const queue of this.#queues.values()) count += queue.inFlightCount;
    return count;
  }

  /** Checks, stores and queues a batch; one result per message, in order. */
  async publish(clientName: string, messages: readonly PublishedMessage[]): Promise<PublishResult[]> {
    const results: PublishResult[] = messages.map((m) => ({ messageId: m.messageId }));
    const accepted: Candidate[] = [];
    const waits: Promise<void>[] = [];
    /** a frame may carry an id twice (a retry batched with its original): one is stored */
    const firstCopy = new Map<string, number>();
    const copies: Array<[index: number, first: number]> = [];
    const now = this.#now();
    messages.forEach((m, index) => {
      try {
        const first = firstCopy.get(m.messageId);
        if (first !== undefined) {
          copies.push([index, first]);
          return;
        }
        const inFlight = this.#appends.of(m.messageId);
        if (inFlight) {
          waits.push(inFlight.then(() => undefined, (error: unknown) => { results[index] = { messageId: m.messageId, error: toPayload(error) }; }));
          return;
        }
        if (this.#dedupe.has(m.messageId)) return;
        accepted.push({ index, message: this.#check(clientName, m, now) });
        firstCopy.set(m.messageId, index);
      } catch (error) {
        results[index] = { messageId: m.messageId, error: toPayload(error) };
      }
    });
    if (accepted.length > 0) {
      const stored = accepted.map((c) => c.message);
      try {
        await this.#appends.run(stored, (ms) => this.#store.append(ms), () => this.#admit(stored, true));
      } catch (error) {
        this.#log.error('store append failed', { error: (error as Error).message, messages: accepted.length });
        const payload = new WhiskerError('E_STORE', 'Message could not be stored').toJSON();
        for (const { index } of accepted) results[index] = { messageId: results[index]!.messageId, error: payload };
      }
    }
    if (waits.length > 0) await Promise.all(waits);
    for (const [index, first] of copies) results[index] = results[first]!;
    return results;
  }

  #check(clientName: string, m: PublishedMessage, now: number): StoredMessage {
    if (this.#stopping) throw new WhiskerError('E_STOPPING', 'Broker is stopping');
    if (!this.#store.isHealthy()) throw new WhiskerError('E_STORE', 'Message store unavailable');
    const channel = this.#channels.parse(m.channel);
    if (m.data === null || m.data === undefined) throw new WhiskerError('E_NO_VALUE', 'Bad format');
    if (tooDeep(m.data, MAX_DEPTH)) throw new WhiskerError('E_TOO_LARGE', `Message nested deeper than ${MAX_DEPTH} levels`);
    if (!this.#policy.rules.canWrite(clientName, channel.endpoint, channel.version, channel.id)) throw forbidden();
    const queue = channel.queue;
    let data: unknown = m.data;
    const format = this.#policy.format(queue);
    if (format) {
      const result = format.check(data);
      if (!result.ok) throw new WhiskerError('E_SCHEMA', 'Bad format', result.details);
      data = result.value;
    }
    const held = this.#queues.get(queue);
    held?.checkCapacity();
    // the queue's own name string, not one more copy per waiting message
    return { seq: ++this.#seq, messageId: m.messageId, queue: held?.name ?? queue, id: channel.id, data, created: m.created, acceptedAt: now, from: clientName };
  }

  /** adds ids to a subscription; each refused id comes back with its error (SPEC §5: id by id) */
  subscribe(subscription: Subscription, ids: readonly string[]): RefusedId[] {
    const refused: RefusedId[] = [];
    const [endpoint, version] = subscription.queue.split('/') as [string, string];
    const rules = this.#policy.rules;
    let queue: Queue | undefined;
    for (const id of ids) {
      if (subscription.ids.has(id)) continue;
      if (!rules.canRead(subscription.clientName, endpoint, version, id) || !this.#reserve(subscription, id)) {
        refused.push({ id, error: forbidden().toJSON() });
        continue;
      }
      subscription.ids.add(id);
      queue ??= this.#queue(subscription.queue);
      queue.subscribe(subscription, id);
    }
    return refused;
  }

  unsubscribe(subscription: Subscription, ids: Iterable<string> = [...subscription.ids]): void {
    const queue = this.#queues.get(subscription.queue);
    for (const id of ids) {
      if (!subscription.ids.delete(id)) continue;
      this.#release(subscription, id);
      queue?.unsubscribe(subscription, id);
    }
  }

  ack(subscription: Subscription, messageId: string, via: string, ok: boolean, delaySeconds: number): void {
    if (!subscription.ids.has(via)) return;
    const queue = this.#queues.get(subscription.queue);
    if (queue?.has(messageId)) queue.ack(subscription, messageId, via, ok, delaySeconds);
    else this.#whenStored(messageId, () => this.#queues.get(subscription.queue)?.ack(subscription, messageId, via, ok, delaySeconds));
  }

  resume(subscription: Subscription): void {
    this.#queues.get(subscription.queue)?.resume(subscription);
  }

  close(): void {
    for (const queue of this.#queues.values()) queue.close();
  }

  #reserve(subscription: Subscription, id: string): boolean {
    const [endpoint, version] = subscription.queue.split('/') as [string, string];
    if (id === WILDCARD || !this.#policy.rules.isReserved(endpoint, version, id)) return true;
    const key = `${subscription.queue}/${id}`;
    const owner = this.#reservations.get(key);
    if (owner && owner !== subscription) return false;
    this.#reservations.set(key, subscription);
    return true;
  }

  #release(subscription: Subscription, id: string): void {
    const key = `${subscription.queue}/${id}`;
    if (this.#reservations.get(key) === subscription) this.#reservations.delete(key);
  }

  #queue(name: string): Queue {
    let queue = this.#queues.get(name);
    if (!queue) {
      queue = new Queue(name, this.#policy.queueSettings(name), {
        now: this.#now,
        store: this.#queueStore,
        warn: (msg, fields) => this.#log.warn(msg, fields),
        discard: (target, message, group, nbDeliveries, reason) => {
          if (target) this.#deadLetter(target, message, group, nbDeliveries, reason);
          else this.#log.warn('message dropped after its last delivery', { queue: message.queue, messageId: message.messageId, group, nbDeliveries, reason });
        },
      });
      queue.setDelivering(this.#isMaster);
      if (this.#draining) queue.drain();
      this.#queues.set(name, queue);
    }
    return queue;
  }

  /** the envelope keeps where the message came from and why it died (docs/protocol.md#dead-letters) */
  #deadLetter(target: string, original: StoredMessage, group: string, nbDeliveries: number, reason: string): void {
    if (original.data === undefined) {
      // a mirror's record that never came near delivery here: its body is on disk (asked now, before the settle is recorded)
      this.#store.readBodies([original.messageId]).then(
        ([data]) => this.#deadLetter(target, { ...original, data: data ?? null }, group, nbDeliveries, reason),
        (error: unknown) => this.#log.error('dead letter lost: its body could not be read', { messageId: original.messageId, error: (error as Error).message }),
      );
      return;
    }
    const channel = parseChannel(target); // checked when the config was compiled
    const message: StoredMessage = {
      seq: ++this.#seq,
      // the same id on every mirror, one per failed group, within the wire's 128 characters
      messageId: createHash('sha256').update(`${original.messageId}\n${group}`).digest('hex').slice(0, 32),
      queue: queueName(channel),
      id: channel.id,
      data: { channel: `${original.queue}/${original.id}`, messageId: original.messageId, nbDeliveries, lastError: reason, from: original.from, created: original.created, data: original.data },
      created: original.created,
      acceptedAt: this.#now(),
      from: original.from,
    };
    this.#log.warn('message dead-lettered', { queue: original.queue, messageId: original.messageId, group, target, nbDeliveries, reason });
    this.#storeDeadLetter(message, 0);
  }

  /** the original is already settled: keep trying until the dead letter is stored */
  #storeDeadLetter(message: StoredMessage, attempt: number): void {
    this.#store.append([message]).then(
      () => {
        this.#dedupe.add(message.messageId);
        this.#observer?.made(message); // before the queue may drop its body
        this.#queue(message.queue).accept(message);
      },
      (error: unknown) => {
        this.#log.error('dead letter not stored yet, retrying', { messageId: message.messageId, attempt, error: (error as Error).message });
        setTimeout(() => this.#storeDeadLetter(message, attempt + 1), Math.min(30_000, 500 * 2 ** attempt)).unref();
      },
    );
  }
}

/** how far two mirrors' clocks may disagree on when a message was accepted */
const CLOCK_MARGIN_MS = 10_000;

/** JSON.parse takes any depth, JSON.stringify does not: a deep value would crash delivery */
const MAX_DEPTH = 256;

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

export function toPeerMessage(m: StoredMessage): PeerMessage {
  return { messageId: m.messageId, queue: m.queue, id: m.id, data: m.data, created: m.created, acceptedAt: m.acceptedAt, from: m.from };
}
