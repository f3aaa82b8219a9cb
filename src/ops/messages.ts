import { randomBytes } from 'node:crypto';
import type { MessageSummary, StoredMessage } from '../broker/api.js';
import type { PublishedMessage, PublishResult } from '../protocol/frames.js';
import { canonicalIdSegment, parseChannel, queueName, unescapeId } from '../protocol/channel.js';
import { WhiskerError } from '../protocol/errors.js';

/** One queue as peek and the dead-letter actions read it (`Queue` has these). */
export interface InspectedQueue {
  readonly name: string;
  readonly size: number;
  readonly settings: { readonly deadLetter: string | null };
  messages(id?: string, limit?: number): MessageSummary[];
  message(messageId: string): StoredMessage | undefined;
}

/** What peek and the dead-letter actions need of a broker (docs/management.md#peek). */
export interface InspectedBroker {
  readonly config: { readonly showBodies: boolean; readonly channels: Readonly<Record<string, { readonly deadLetter?: string }>> };
  readonly isMaster: boolean;
  readonly queues: ReadonlyMap<string, InspectedQueue>;
  /** bodies the queues left on disk, in the order asked (undefined: gone) */
  readBodies(messageIds: readonly string[]): Promise<unknown[]>;
  /** the broker settles a waiting message away; ops/ never changes a queue itself */
  removeMessage(queue: string, messageId: string): boolean;
  purgeQueue(queue: string, id?: string): number;
  publish(clientName: string, messages: readonly PublishedMessage[]): Promise<PublishResult[]>;
}

export const PEEK_LIMIT = 20;
export const MAX_PEEK_LIMIT = 1000;

/** a refused operator action: `code` says which (docs/management.md#dead-letters) */
export class OperatorError extends Error {
  readonly code: 'E_NOT_FOUND' | 'E_BAD_REQUEST' | 'E_NOT_MASTER' | 'E_REFUSED';
  constructor(code: OperatorError['code'], message: string) {
    super(message);
    this.name = 'OperatorError';
    this.code = code;
  }
}

export interface PeekedMessage {
  messageId: string;
  /** as users write it (unescaped) */
  id: string;
  created: number;
  acceptedAt: number;
  from: string;
  waitingForSubscriber: boolean;
  groups: MessageSummary['groups'];
  /** only with `showBodies` */
  data?: unknown;
}

export interface PeekView {
  queue: string;
  size: number;
  bodies: boolean;
  messages: PeekedMessage[];
  truncated: boolean;
}

export const peekLimit = (asked: unknown): number => {
  const n = typeof asked === 'string' ? Number(asked) : asked;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? Math.min(n, MAX_PEEK_LIMIT) : PEEK_LIMIT;
};

function queueOf(broker: InspectedBroker, name: unknown): InspectedQueue {
  const queue = typeof name === 'string' ? broker.queues.get(name) : undefined;
  if (!queue) throw new OperatorError('E_NOT_FOUND', `no queue ${typeof name === 'string' ? name : ''} on this broker`);
  return queue;
}

/** an id as a user writes it (`a/b`) in the queue's escaped form (`a%2Fb`) */
function idOf(id: unknown): string | undefined {
  if (id === undefined || id === null || id === '') return undefined;
  try {
    if (typeof id !== 'string') throw new Error('not a string');
    return canonicalIdSegment(id);
  } catch (error) {
    throw new OperatorError('E_BAD_REQUEST', `bad id: ${(error as Error).message}`);
  }
}

/** the oldest held messages of a queue (or of one raw id), without taking them; bodies only with `showBodies` */
export async function peek(broker: InspectedBroker, name: unknown, options: { id?: unknown; rawId?: unknown; limit?: unknown } = {}): Promise<PeekView> {
  const queue = queueOf(broker, name);
  const id = options.rawId !== undefined ? idOf(typeof options.rawId === 'string' ? encodeId(options.rawId) : options.rawId) : idOf(options.id);
  const limit = peekLimit(options.limit);
  const summaries = queue.messages(id, limit + 1);
  const listed = summaries.slice(0, limit);
  const bodies = broker.config.showBodies ? await bodiesOf(broker, queue, listed.map((m) => m.messageId)) : null;
  const messages = listed.map((m) => ({
    messageId: m.messageId, id: unescapeId(m.id), created: m.created, acceptedAt: m.acceptedAt, from: m.from, waitingForSubscriber: m.waitingForSubscriber, groups: m.groups,
    ...(bodies ? { data: bodies.get(m.messageId) } : {}),
  }));
  return { queue: queue.name, size: queue.size, bodies: bodies !== null, messages, truncated: summaries.length > limit };
}

/** `/`, `*` and `%` of a raw id percent-encoded, as in a channel */
const encodeId = (raw: string): string => raw.replace(/[%/*]/g, (c) => encodeURIComponent(c));

async function bodiesOf(broker: InspectedBroker, queue: InspectedQueue, messageIds: readonly string[]): Promise<Map<string, unknown>> {
  const held = messageIds.map((id) => queue.message(id)).filter((m): m is StoredMessage => m !== undefined);
  const bodies = new Map<string, unknown>(held.filter((m) => m.data !== undefined).map((m) => [m.messageId, m.data]));
  const cold = held.filter((m) => m.data === undefined).map((m) => m.messageId);
  if (cold.length > 0) (await broker.readBodies(cold)).forEach((data, i) => data !== undefined && bodies.set(cold[i]!, data));
  return bodies;
}

// ---- dead letters ------------------------------------------------------------------------

/** the queues some channel dead-letters into: the only ones the dead-letter actions touch */
export function deadLetterQueues(broker: InspectedBroker): string[] {
  const names = new Set<string>();
  const add = (target: string | null | undefined) => {
    if (!target) return;
    try {
      names.add(queueName(parseChannel(target)));
    } catch {
      // checked when the config was compiled
    }
  };
  for (const channel of Object.values(broker.config.channels)) add(channel.deadLetter);
  for (const queue of broker.queues.values()) add(queue.settings.deadLetter);
  return [...names].sort();
}

/** the envelope a dead letter carries (docs/protocol.md#dead-letters) */
interface Envelope {
  channel: string;
  messageId: string;
  nbDeliveries: number;
  lastError: string;
  from: string;
  created: number;
  data: unknown;
}

function envelopeOf(data: unknown): Envelope | null {
  if (typeof data !== 'object' || data === null) return null;
  const e = data as Record<string, unknown>;
  if (typeof e.channel !== 'string' || typeof e.messageId !== 'string' || typeof e.from !== 'string') return null;
  return { channel: e.channel, messageId: e.messageId, nbDeliveries: Number(e.nbDeliveries) || 0, lastError: String(e.lastError ?? ''), from: e.from, created: Number(e.created) || 0, data: e.data };
}

export interface DeadLetterView {
  messageId: string;
  /** the dead-letter channel's id */
  id: string;
  deadAt: number;
  /** where it came from; null when the body is not an envelope (sent there by a client) */
  original: { channel: string; messageId: string; from: string; created: number; nbDeliveries: number; lastError: string } | null;
  data?: unknown;
}

export interface DeadLettersView {
  queues: Array<{ queue: string; size: number }>;
  queue: string | null;
  bodies: boolean;
  messages: DeadLetterView[];
  truncated: boolean;
}

function deadLetterQueue(broker: InspectedBroker, name: unknown): InspectedQueue | null {
  if (typeof name !== 'string' || !deadLetterQueues(broker).includes(name)) throw new OperatorError('E_NOT_FOUND', `${typeof name === 'string' ? name : 'that'} is not a dead-letter queue of this broker`);
  return broker.queues.get(name) ?? null;
}

/** the dead-letter queues with their sizes, and the oldest dead letters of one of them */
export async function listDeadLetters(broker: InspectedBroker, name?: unknown, limitAsked?: unknown): Promise<DeadLettersView> {
  const queues = deadLetterQueues(broker).map((queue) => ({ queue, size: broker.queues.get(queue)?.size ?? 0 }));
  const chosen = name ?? queues.find((q) => q.size > 0)?.queue ?? queues[0]?.queue;
  if (chosen === undefined) return { queues, queue: null, bodies: broker.config.showBodies, messages: [], truncated: false };
  const queue = deadLetterQueue(broker, chosen);
  const limit = peekLimit(limitAsked);
  const summaries = queue ? queue.messages(undefined, limit + 1) : [];
  const listed = summaries.slice(0, limit);
  // the envelope is the body: read it, then keep the user's data only with showBodies
  const bodies = queue ? await bodiesOf(broker, queue, listed.map((m) => m.messageId)) : new Map<string, unknown>();
  const messages = listed.map((m): DeadLetterView => {
    const envelope = envelopeOf(bodies.get(m.messageId));
    const original = envelope && { channel: envelope.channel, messageId: envelope.messageId, from: envelope.from, created: envelope.created, nbDeliveries: envelope.nbDeliveries, lastError: envelope.lastError };
    const data = envelope ? envelope.data : bodies.get(m.messageId);
    return { messageId: m.messageId, id: unescapeId(m.id), deadAt: m.acceptedAt, original, ...(broker.config.showBodies ? { data } : {}) };
  });
  return { queues, queue: chosen as string, bodies: broker.config.showBodies, messages, truncated: summaries.length > limit };
}

/**
 * Sends each dead letter's original message again to its original channel, as its original
 * sender (rules and formats apply as to that client), then drops the dead letter. Master only:
 * slaves answer no sends (SPEC §9). One refused message leaves its dead letter in place.
 */
export async function replayDeadLetters(broker: InspectedBroker, name: unknown, messageIds: readonly unknown[]): Promise<{ replayed: Array<{ messageId: string; newMessageId: string; channel: string }>; failed: Array<{ messageId: string; code: string; reason: string }> }> {
  if (!broker.isMaster) throw new OperatorError('E_NOT_MASTER', 'only the master replays dead letters (a slave answers no sends)');
  const queue = deadLetterQueue(broker, name);
  const replayed: Array<{ messageId: string; newMessageId: string; channel: string }> = [];
  const failed: Array<{ messageId: string; code: string; reason: string }> = [];
  for (const messageId of messageIds) {
    const held = typeof messageId === 'string' ? queue?.message(messageId) : undefined;
    if (!held) {
      failed.push({ messageId: String(messageId), code: 'E_NOT_FOUND', reason: 'no such dead letter' });
      continue;
    }
    const envelope = envelopeOf((await bodiesOf(broker, queue!, [held.messageId])).get(held.messageId));
    if (!envelope) {
      failed.push({ messageId: held.messageId, code: 'E_REFUSED', reason: 'not a dead-letter envelope: nothing to replay it to' });
      continue;
    }
    const newMessageId = randomBytes(16).toString('hex');
    const [result] = await broker.publish(envelope.from, [{ messageId: newMessageId, channel: envelope.channel, data: envelope.data, created: envelope.created }]);
    if (result?.error) {
      failed.push({ messageId: held.messageId, code: result.error.code, reason: result.error.message });
      continue;
    }
    broker.removeMessage(queue!.name, held.messageId);
    replayed.push({ messageId: held.messageId, newMessageId, channel: envelope.channel });
  }
  return { replayed, failed };
}

/** drops dead letters: the given ones, or every one of the queue with `all` */
export function purgeDeadLetters(broker: InspectedBroker, name: unknown, messageIds: readonly unknown[] | 'all'): { purged: number } {
  if (!broker.isMaster) throw new OperatorError('E_NOT_MASTER', 'purge dead letters on the master: it settles them on its mirrors too');
  const queue = deadLetterQueue(broker, name);
  if (!queue) return { purged: 0 };
  if (messageIds === 'all') return { purged: broker.purgeQueue(queue.name) };
  let purged = 0;
  for (const messageId of messageIds) if (typeof messageId === 'string' && broker.removeMessage(queue.name, messageId)) purged++;
  return { purged };
}

export const toWhiskerCode = (error: unknown): string => (error instanceof OperatorError || error instanceof WhiskerError ? error.code : 'E_INTERNAL');
