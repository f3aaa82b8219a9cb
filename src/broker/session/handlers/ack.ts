import type { AckFrame } from '../../../protocol/frames.js';
import type { SessionPort } from '../ports.js';

/** acks reach every broker, so slaves drop their copy too (docs/protocol.md#ack) */
export function handleAck(session: SessionPort, frame: AckFrame): void {
  const router = session.ctx.router;
  for (const ack of frame.acks) {
    const subscription = session.subscriptions.get(ack.sub);
    if (subscription) router.ack(subscription, ack.messageId, ack.via, ack.ok, ack.delaySeconds ?? 0);
  }
}
