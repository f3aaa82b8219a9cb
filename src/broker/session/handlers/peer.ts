import { protocolError } from '../../../protocol/errors.js';
import type { ClientFrame } from '../../../protocol/frames.js';
import type { SessionPort } from '../ports.js';

/** per peer link, the stores of what it offered, until the last one: its offer's end waits for them */
const offersStoring = new WeakMap<SessionPort, Promise<void>>();

/** A mirror broker's link carries these five frames only (docs/protocol.md#peers). */
export function handlePeerFrame(session: SessionPort, frame: ClientFrame): void {
  const { ctx } = session;
  switch (frame.type) {
    case 'peerState':
      if (frame.serviceId !== session.clientName) {
        session.fail(protocolError('a peer speaks for itself only'));
        return;
      }
      ctx.peers.observeIncoming(session, session.clientName, { configuredMaster: frame.configuredMaster, isMaster: frame.isMaster });
      return;
    case 'follow':
      ctx.feed.follow(session, frame.history, frame.resume === true);
      return;
    case 'historyAck':
      ctx.feed.historyAck(session, frame.n);
      return;
    case 'offer': {
      // what only a follower stored (a send answered E_NO_MASTER) becomes the master's too
      if (!ctx.router.isMaster) return;
      const before = offersStoring.get(session) ?? Promise.resolve();
      const stored = frame.messages.length === 0 ? before : ctx.replica.applyMessages(frame.messages).catch((error: unknown) =>
        ctx.log.error('could not store what a mirror offered', { peer: session.label, messages: frame.messages.length, error: (error as Error).message }),
      );
      // its offer's end: once what it offered is stored, clients' sends held for it go on (mirror/promotion-gate.ts)
      const all = Promise.all([before, stored]).then(() => undefined);
      offersStoring.set(session, all);
      if (frame.last) void all.then(() => ctx.peers.offerEnded(session.clientName));
      return;
    }
    case 'keys':
      // client keys alike on every mirror (SPEC §4); the reply confirms they were applied
    {
      const onward = ctx.keySync.apply(session.clientName, frame);
      session.send({ type: 'reply', req: frame.req });
      // at once, on this link: the peer may hold a key revoked here while our own link to it is down
      if (onward.revoked.length > 0 || onward.bound.length > 0) session.send({ type: 'keys', req: 0, ...onward });
      return;
    }
    default:
      session.fail(protocolError(`a peer link carries peerState, follow, historyAck, offer and keys, not ${frame.type}`));
  }
}

/** the peer's link closed: it follows no more, its role is no longer heard */
export function peerGone(session: SessionPort): void {
  session.ctx.feed.unfollow(session);
  session.ctx.peers.observeIncoming(session, session.clientName, undefined);
}
