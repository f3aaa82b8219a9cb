import { canonicalIdSegment, checkQueueParts } from '../../../protocol/channel.js';
import { WhiskerError } from '../../../protocol/errors.js';
import type { AddIdsFrame, RemoveIdsFrame, ReplyFrame, SubscribeFrame, UnsubscribeFrame } from '../../../protocol/frames.js';
import type { SessionPort } from '../ports.js';
import { mayRead, routed } from './routed.js';
import { Subscription } from '../../queue/subscription.js';

/**
 * Requests answered with a `reply` of the same `req` (docs/protocol.md#subscribe); a reserved id
 * taken is on disk before the answer (it survives kill -9 then).
 */
function answer(session: SessionPort, req: number, work: () => Pick<ReplyFrame, 'refused'> | void): void {
  try {
    const extra = work() ?? {};
    const unwritten = session.ctx.router.reservations.unwritten;
    if (unwritten) void unwritten.then(() => session.send({ type: 'reply', req, ...extra }));
    else session.send({ type: 'reply', req, ...extra });
  } catch (error) {
    if (!(error instanceof WhiskerError)) throw error;
    session.send({ type: 'reply', req, error: error.toJSON() });
  }
}

/**
 * `allowEmpty`: a subscribe may start with no ids, for addIds to fill (SPEC §2, reference K59).
 * `strict`: new ids may not hold control characters; removing one is always allowed.
 */
function wireIds(ids: readonly string[], allowEmpty = false, strict = true): string[] {
  if (ids.length === 0 && !allowEmpty) throw new WhiskerError('E_BAD_CHANNEL', 'Bad id');
  return [...new Set(ids.map((id) => canonicalIdSegment(id, strict)))];
}

function subscriptionOf(session: SessionPort, sub: number): Subscription {
  const subscription = session.subscriptions.get(sub);
  if (!subscription) throw new WhiskerError('E_PROTOCOL', `No subscription ${sub}`);
  return subscription;
}

function add(session: SessionPort, subscription: Subscription, ids: string[]) {
  const limit = session.ctx.policy.config.limits.maxSubscriptionsPerConnection;
  let total = 0;
  for (const s of session.subscriptions.values()) total += s.ids.size;
  const fresh = ids.filter((id) => !subscription.ids.has(id));
  if (total + fresh.length > limit) throw new WhiskerError('E_LIMIT', `Too many subscriptions on this connection (limit ${limit})`);
  const refused = session.ctx.router.subscribe(subscription, fresh);
  return refused.length > 0 ? { refused } : {};
}

function refuse(session: SessionPort, req: number): (error: WhiskerError) => void {
  return (error) => session.send({ type: 'reply', req, error: error.toJSON() });
}

/** in a cluster, on the set that owns the queue (routed.ts) */
export function handleSubscribe(session: SessionPort, frame: SubscribeFrame): void {
  const queue = `${frame.endpoint}/${frame.version}`;
  routed(session, queue, () => mayRead(session, frame.endpoint, frame.version, frame.ids), refuse(session, frame.req), () => subscribe(session, frame));
}

function subscribe(session: SessionPort, frame: SubscribeFrame): void {
  answer(session, frame.req, () => {
    if (session.subscriptions.has(frame.sub)) throw new WhiskerError('E_PROTOCOL', `Subscription ${frame.sub} already exists`);
    checkQueueParts(frame.endpoint, frame.version);
    const ids = wireIds(frame.ids, true);
    const queue = `${frame.endpoint}/${frame.version}`;
    const prefetch = frame.prefetch ?? session.ctx.policy.queueSettings(queue).prefetch;
    if (prefetch < 1) throw new WhiskerError('E_PROTOCOL', 'prefetch must be at least 1');
    const subscription = new Subscription(session, frame.sub, frame.mode, queue, prefetch);
    // before its ids: a subscription made paused takes nothing (docs/protocol.md#flow)
    if (frame.limit !== undefined) subscription.limit = frame.limit;
    session.subscriptions.set(frame.sub, subscription);
    try {
      return add(session, subscription, ids);
    } catch (error) {
      session.subscriptions.delete(frame.sub);
      throw error;
    }
  });
}

export function handleAddIds(session: SessionPort, frame: AddIdsFrame): void {
  const run = () => answer(session, frame.req, () => add(session, subscriptionOf(session, frame.sub), wireIds(frame.ids)));
  const subscription = session.subscriptions.get(frame.sub);
  if (!subscription) return run();
  const [endpoint = '', version = ''] = subscription.queue.split('/');
  routed(session, subscription.queue, () => mayRead(session, endpoint, version, frame.ids), refuse(session, frame.req), run);
}

export function handleRemoveIds(session: SessionPort, frame: RemoveIdsFrame): void {
  answer(session, frame.req, () => {
    session.ctx.router.unsubscribe(subscriptionOf(session, frame.sub), wireIds(frame.ids, false, false));
  });
}

export function handleUnsubscribe(session: SessionPort, frame: UnsubscribeFrame): void {
  answer(session, frame.req, () => {
    // a replay's sub: the replay stops at its next message and ends with the count so far
    if (session.replays.delete(frame.sub)) return;
    const subscription = session.subscriptions.get(frame.sub);
    if (!subscription) return;
    session.subscriptions.delete(frame.sub);
    session.ctx.router.unsubscribe(subscription);
  });
}
