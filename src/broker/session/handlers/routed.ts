import { canonicalIdSegment, checkQueueParts } from '../../../protocol/channel.js';
import type { WhiskerError } from '../../../protocol/errors.js';
import type { SessionPort } from '../ports.js';

/**
 * Runs `work` (a request about `queue`) on the set that owns the queue (SPEC §13): without a
 * cluster, or for a queue of this set, at once; for one of another set, `E_MOVED` with where it
 * is; for one not placed yet, after placing it when `mayPlace` (the request passed the rules),
 * else at once (it is refused here, nothing is placed). `refuse` answers the request with an error.
 */
export function routed(session: SessionPort, queue: string, mayPlace: () => boolean, refuse: (error: WhiskerError) => void, work: () => void): void {
  const cluster = session.ctx.cluster;
  if (!cluster) return work();
  const owner = cluster.owner(queue);
  if (owner === cluster.set) return work();
  if (owner !== undefined) return refuse(cluster.moved(owner, queue));
  if (!mayPlace()) return work();
  cluster.place(queue).then(
    (set) => {
      if (!session.isReady) return;
      if (set === cluster.set) work();
      else refuse(cluster.moved(set, queue));
    },
    (error: WhiskerError) => void (session.isReady && refuse(error)),
  );
}

/** a well-formed queue and at least one id this client may read: a subscription that may place its queue */
export function mayRead(session: SessionPort, endpoint: string, version: string, ids: readonly string[]): boolean {
  try {
    checkQueueParts(endpoint, version);
    return ids.some((id) => session.ctx.policy.rules.canRead(session.clientName, endpoint, version, canonicalIdSegment(id, true)));
  } catch {
    return false;
  }
}
