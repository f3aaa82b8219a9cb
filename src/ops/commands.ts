import type { QueueCounters, StoredMessage } from '../broker/api.js';
import { canonicalIdSegment, unescapeId } from '../protocol/channel.js';
import { type ManagedBroker, subscriberCounts } from './api.js';
import { ControlError, type ControlRequest, type ControlResponse, type ControlStream } from './control.js';
import { type InspectedBroker, listDeadLetters, OperatorError, peek, purgeDeadLetters, replayDeadLetters } from './messages.js';

/** What the operator's commands read of a broker: the management views, peek, and a tap. */
export type OperatedBroker = ManagedBroker & InspectedBroker & {
  tap(listener: (message: StoredMessage) => void): () => void;
};

const ok = (result: unknown): ControlResponse => ({ ok: true, result });

/**
 * The control-socket commands of `whisker stat`, `peek`, `tail` and `dlq` (docs/operations.md#commands);
 * null for a command that is not one of them. Bodies only with `showBodies`.
 */
export function operatorCommand(broker: OperatedBroker, request: ControlRequest, stream: ControlStream, now: () => number = Date.now): Promise<ControlResponse> | ControlResponse | null {
  switch (request.command) {
    case 'stats':
      return ok(statsView(broker, request.queue, now()));
    case 'peek':
      return guarded(() => peek(broker, request.queue, { id: request.id, limit: request.limit }));
    case 'tail':
      return ok(tail(broker, request, stream));
    case 'dlq-list':
      return guarded(() => listDeadLetters(broker, request.queue, request.limit));
    case 'dlq-replay':
      return guarded(async () => replayDeadLetters(broker, request.queue, request.all === true ? allIds(broker, request.queue) : list(request.messageIds)));
    case 'dlq-purge':
      return guarded(async () => purgeDeadLetters(broker, request.queue, request.all === true ? 'all' : list(request.messageIds)));
    default:
      return null;
  }
}

const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

function allIds(broker: InspectedBroker, queue: unknown): string[] {
  const q = typeof queue === 'string' ? broker.queues.get(queue) : undefined;
  return q ? q.messages().map((m) => m.messageId) : [];
}

async function guarded(work: () => Promise<unknown>): Promise<ControlResponse> {
  try {
    return ok(await work());
  } catch (error) {
    if (error instanceof OperatorError) throw new ControlError(error.code, error.message);
    throw error;
  }
}

export interface StatsView {
  /** ms epoch of the broker's clock: rates are the difference between two answers */
  at: number;
  queues: Array<{ queue: string; depth: number; inFlight: number; size: number; consumers: number; listeners: number; oldestWaitingSeconds: number; counters: QueueCounters }>;
}

/** counters and counts of every queue (or one) at this instant: `whisker stat` makes rates of two */
export function statsView(broker: OperatedBroker, queue: unknown, at: number): StatsView {
  const subs = subscriberCounts(broker);
  const queues = [...broker.queues.values()].filter((q) => queue === undefined || q.name === queue).sort((a, b) => (a.name < b.name ? -1 : 1));
  return {
    at,
    queues: queues.map((q) => {
      const oldest = q.oldestWaitingAcceptedAt();
      return {
        queue: q.name, depth: q.depth, inFlight: q.inFlightCount, size: q.size,
        consumers: subs.get(q.name)?.consumers ?? 0, listeners: subs.get(q.name)?.listeners ?? 0,
        oldestWaitingSeconds: oldest === null ? 0 : Math.max(0, (at - oldest) / 1000),
        counters: { ...q.counters },
      };
    }),
  };
}

/**
 * Follows the messages entering a queue (one id, or all) without being a recipient: nothing is
 * taken from consumers, nothing waits for the tail (nsq_tail's ephemeral channel, without the
 * copy). Events stop when the command's connection closes; a slow reader loses events, counted.
 */
function tail(broker: OperatedBroker, request: ControlRequest, stream: ControlStream): { queue: string; id: string | null; bodies: boolean } {
  const queue = request.queue;
  if (typeof queue !== 'string' || !/^[^/]+\/[^/]+$/.test(queue)) throw new ControlError('E_BAD_QUEUE', 'tail needs a queue "endpoint/version"');
  let id: string | null = null;
  if (typeof request.id === 'string' && request.id !== '') {
    try {
      id = canonicalIdSegment(request.id);
    } catch (error) {
      throw new ControlError('E_BAD_ID', `bad id: ${(error as Error).message}`);
    }
  }
  const bodies = broker.config.showBodies;
  let dropped = 0;
  const untap = broker.tap((m) => {
    if (m.queue !== queue || (id !== null && m.id !== id)) return;
    if (dropped > 0 && stream.write({ dropped })) dropped = 0;
    const event = { messageId: m.messageId, queue: m.queue, id: unescapeId(m.id), from: m.from, created: m.created, acceptedAt: m.acceptedAt, ...(bodies ? { data: m.data ?? null } : {}) };
    if (dropped > 0 || !stream.write(event)) dropped++;
  });
  stream.onClose(untap);
  return { queue, id: id === null ? null : unescapeId(id), bodies };
}
