import type { PublishFrame } from '../../../protocol/frames.js';
import type { SessionPort } from '../ports.js';

/** every broker answers: the master's answer is the send's result, a slave's is `storedBy` */
export function handlePublish(session: SessionPort, frame: PublishFrame): void {
  const expected = session.expectResults(frame.messages);
  session.ctx.intake.publish(session.clientName, frame.messages).then(
    (results) => session.queueResults(results, expected),
    (error: unknown) => {
      session.queueResults([], expected);
      session.ctx.log.error('publish failed', { client: session.label, error: (error as Error).message });
    },
  );
}
