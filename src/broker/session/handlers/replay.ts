import { canonicalIdSegment, checkQueueParts, WILDCARD } from '../../../protocol/channel.js';
import { WhiskerError } from '../../../protocol/errors.js';
import type { RefusedId, ReplayFrame } from '../../../protocol/frames.js';
import type { ReadRecord } from '../../history/history.js';
import type { SessionPort } from '../ports.js';
import { routed } from './routed.js';

/** replays under way on one connection at most (docs/configuration.md#retention) */
export const MAX_REPLAYS_PER_CONNECTION = 4;

/**
 * A replay (docs/protocol.md#replay): answered with a `reply` (refused ids as for subscribe),
 * then `deliver` frames for `sub` in acceptance order, then `replayEnd` with the count. It never
 * touches the live queue: no ack is expected, none is applied. Flow control as for deliveries.
 */
export function handleReplay(session: SessionPort, frame: ReplayFrame): void {
  // in a cluster, the set that owns the queue holds its history; a replay places nothing
  const moved = (error: WhiskerError) => session.send({ type: 'reply', req: frame.req, error: error.toJSON() });
  routed(session, `${frame.endpoint}/${frame.version}`, () => false, moved, () => replay(session, frame));
}

function replay(session: SessionPort, frame: ReplayFrame): void {
  const { ctx } = session;
  let ids: Set<string>;
  try {
    checkQueueParts(frame.endpoint, frame.version);
    if (frame.ids.length === 0) throw new WhiskerError('E_BAD_CHANNEL', 'A replay names at least one id, or *');
    if (session.subscriptions.has(frame.sub) || session.replays.has(frame.sub)) throw new WhiskerError('E_PROTOCOL', `Subscription ${frame.sub} already exists`);
    const queue = `${frame.endpoint}/${frame.version}`;
    if (session.replays.size >= MAX_REPLAYS_PER_CONNECTION) throw new WhiskerError('E_LIMIT', `Too many replays on this connection (limit ${MAX_REPLAYS_PER_CONNECTION})`);
    const refused: RefusedId[] = [];
    ids = new Set();
    for (const id of new Set(frame.ids.map((id) => canonicalIdSegment(id, true)))) {
      // read rights and reserved ids as for a listen (SPEC §5)
      const reason = ctx.policy.rules.readRefusal(session.clientName, frame.endpoint, frame.version, id);
      const owner = reason === null ? ctx.router.reservedByAnother(session.clientName, queue, id) : undefined;
      if (reason === null && owner === undefined) ids.add(id);
      else refused.push({ id, error: ctx.router.refusals.forbidden(session.clientName, `${queue}/${id}`, 'read', reason ?? 'reserved', owner).toJSON() });
    }
    // after the rights: a client that may read none of it learns nothing about its history
    if (ids.size > 0 && !ctx.history.isRetained(queue)) throw new WhiskerError('E_NO_HISTORY', `${queue} keeps no history (no retention in its channel config)`);
    session.send({ type: 'reply', req: frame.req, ...(refused.length > 0 ? { refused } : {}) });
  } catch (error) {
    if (!(error instanceof WhiskerError)) throw error;
    session.send({ type: 'reply', req: frame.req, error: error.toJSON() });
    return;
  }
  if (ids.size === 0) {
    session.sendAfterDeliveries({ type: 'replayEnd', sub: frame.sub, count: 0 });
    return;
  }
  session.replays.add(frame.sub);
  void run(session, frame, ids);
}

async function run(session: SessionPort, frame: ReplayFrame, ids: ReadonlySet<string>): Promise<void> {
  const queue = `${frame.endpoint}/${frame.version}`;
  const limit = frame.limit ?? Infinity;
  const all = ids.has(WILDCARD);
  let count = 0;
  const deliver = (record: ReadRecord): boolean | Promise<boolean> => {
    if (!session.isReady || !session.replays.has(frame.sub)) return false; // closed, or stopped by an unsubscribe
    const via = all ? WILDCARD : ids.has(record.id) ? record.id : null;
    if (via === null) return true;
    // the data as stored, spliced into the frame: never parsed and serialised again
    session.queueDelivery({ sub: frame.sub, messageId: record.messageId, channel: `${queue}/${record.id}`, data: null, created: record.created, nbRequeues: 0, from: record.from, via }, record.dataJson);
    session.ctx.history.replayedMessages++;
    if (++count >= limit) return false;
    return session.isWritable() || session.whenWritable().then(() => session.isReady && session.replays.has(frame.sub));
  };
  const range = { ...(frame.since !== undefined ? { since: frame.since } : {}), ...(frame.sinceId !== undefined ? { sinceId: frame.sinceId } : {}), ...(frame.until !== undefined ? { until: frame.until } : {}) };
  try {
    const asMaster = session.ctx.peers.isMaster;
    if (asMaster) await session.ctx.peers.applied();
    const whole = await session.ctx.history.read(queue, range, deliver, asMaster ? WHOLE_WAIT_MS : undefined);
    if (!whole) session.ctx.log.warn("replay served before this master wrote the clients' copies it holds back (still catching up)", { client: session.label, queue, waitedMs: WHOLE_WAIT_MS });
    session.sendAfterDeliveries({ type: 'replayEnd', sub: frame.sub, count });
  } catch (error) {
    session.ctx.log.error('replay failed: its history could not be read', { client: session.label, queue, error: (error as Error).message });
    session.sendAfterDeliveries({ type: 'replayEnd', sub: frame.sub, count, error: new WhiskerError('E_STORE', 'History could not be read').toJSON() });
  } finally {
    session.replays.delete(frame.sub);
  }
}

/**
 * The longest a replay on a master waits for what its history holds back (History.read). A master
 * replays every send answered before the replay was asked (SPEC §7, docs/protocol.md#replay): when
 * it was a slave promoted a moment ago, the feed frames it received from its old master may still
 * be waiting to be applied (peers.applied); then its history may hold back its clients' copies'
 * records (a master catching up writes them once its peers' offers are in, up to OFFER_WAIT_MS
 * after its election: outside check atk27h H1, 29,226 answered sends missing), so the read begins
 * once nothing is held back. Past WHOLE_WAIT_MS (fenced and elected again and again) it replays
 * what is written, with a warning. A slave does not wait: it replays what it has applied, its lag
 * behind its master can be long.
 */
export const WHOLE_WAIT_MS = 30_000;
