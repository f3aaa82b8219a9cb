import type { AckFrame, FlowFrame, TouchFrame } from '../../../protocol/frames.js';
import type { SessionPort } from '../ports.js';

/** acks reach every broker, so slaves drop their copy too (docs/protocol.md#ack) */
export function handleAck(session: SessionPort, frame: AckFrame): void {
  const router = session.ctx.router;
  for (const ack of frame.acks) {
    const subscription = session.subscriptions.get(ack.sub);
    if (subscription) router.ack(subscription, ack.messageId, ack.via, ack.ok, ack.delaySeconds ?? 0);
  }
}

/**
 * touches reach every broker like acks; only the master, for a delivery in flight to this very
 * subscription, moves its deadline (docs/protocol.md#touch)
 */
export function handleTouch(session: SessionPort, frame: TouchFrame): void {
  const router = session.ctx.router;
  for (const touch of frame.touches) {
    const subscription = session.subscriptions.get(touch.sub);
    if (subscription) router.touch(subscription, touch.messageId, touch.via);
  }
}

/**
 * a subscription's flow limit (docs/protocol.md#flow), on every broker like an ack; an unknown
 * `sub` (closed meanwhile) is ignored as an ack to it is
 */
export function handleFlow(session: SessionPort, frame: FlowFrame): void {
  const subscription = session.subscriptions.get(frame.sub);
  if (subscription) session.ctx.router.flow(subscription, frame.limit);
}
