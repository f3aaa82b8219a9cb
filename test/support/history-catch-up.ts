import type { FollowHistory, HistoryFrame } from '../../src/protocol/frames.js';
import type { History } from '../../src/broker/history/history.js';
import { HistoryStream } from '../../src/broker/mirror/history-stream.js';
import { makeStoredMessage, type StoredMessage } from '../../src/broker/store/store.js';

/** `count` messages of `queue` named `${prefix}${n}`, accepted 1 ms apart from `at` */
export function historyMessages(queue: string, prefix: string, count: number, at: number): StoredMessage[] {
  return Array.from({ length: count }, (_, n) => makeStoredMessage(n + 1, { messageId: `${prefix}${n}`, queue, id: 'k', data: { n: `${prefix}${n}` }, created: at + n, acceptedAt: at + n, from: 'producer' }));
}

/** a channel's replay from this history: the message ids, in order */
export async function replayIds(history: History, queue: string): Promise<string[]> {
  const ids: string[] = [];
  await history.read(queue, {}, (record) => {
    ids.push(record.messageId);
    return true;
  });
  return ids;
}

/**
 * The master's history catch-up for the follower (HistoryStream between two real histories),
 * written as replica.applyHistory writes it; `cut`: only that many frames applied (its link lost);
 * `anchors`: what the follower names (by default its own `anchors(16)`)
 */
export async function streamCatchUp(master: History, follower: History, options: { cut?: number; anchors?: FollowHistory[] } = {}): Promise<void> {
  const plan = HistoryStream.plan(master.views(), new Set(), options.anchors ?? (await follower.anchors(16)));
  const frames: HistoryFrame[] = [];
  const stream: HistoryStream = new HistoryStream({
    sendText: (text) => {
      const frame = JSON.parse(text) as HistoryFrame;
      frames.push(frame);
      queueMicrotask(() => stream.acked(frame.n));
    },
    whenWritable: () => Promise.resolve(),
  });
  if (!(await stream.run(plan))) throw new Error('the catch-up stream was cut short');
  for (const frame of frames.slice(0, options.cut)) {
    if (frame.after !== undefined) await follower.catchUpBegin(frame.queue, frame.after);
    if (frame.records.length > 0) await follower.catchUpWrite(frame.queue, frame.records);
    if (frame.last) await follower.catchUpEnd(frame.queue);
  }
}
