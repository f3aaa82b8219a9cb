import { WhiskerError } from '../protocol/errors.js';
import type { SubscriptionMode } from '../protocol/frames.js';
import type { Settle, SubscriptionSink } from './subscription.js';
import type { ConsumeHandler, DeliveryInfo, Done, ListenHandler } from './types.js';

/** How a handler's failure is told to the application: the client's `error` event. */
export type ReportError = (error: WhiskerError) => void;

/** seconds before a message whose handler failed comes back, from its number of earlier deliveries */
export type RetryDelay = (nbRequeues: number) => number;

const NO_DONE: Done = () => {};

/**
 * The handler rule (docs/client.md#handlers): a listener is acked when it returns, or when
 * its promise resolves; a consumer when it calls done(), or when its promise resolves. A
 * handler that throws or rejects never crashes the process: the message is requeued after
 * `retryDelay` and `error` gets an E_HANDLER with the message id and channel.
 */
export function handlerSink(mode: SubscriptionMode, handler: ListenHandler | ConsumeHandler, report: ReportError, retryDelay: RetryDelay): SubscriptionSink {
  const call = (args: unknown[]): unknown => (handler as (...a: unknown[]) => unknown)(...args);
  return {
    message(data: unknown, info: DeliveryInfo, settle: Settle): void {
      let settled = false;
      const done: Done = (ok = true, delaySeconds = 0) => {
        if (settled) return;
        settled = true;
        settle(ok !== false, ok === false ? Math.max(0, Number(delaySeconds) || 0) : 0);
      };
      const fail = (error: unknown) => {
        report(handlerError(mode, error, info));
        done(false, retryDelay(info.nbRequeues));
      };
      let result: unknown;
      try {
        result = call(mode === 'listen' ? [null, data, info] : [null, data, done, info]);
      } catch (error) {
        fail(error);
        return;
      }
      if (isThenable(result)) result.then(() => done(true), fail);
      else if (mode === 'listen') done(true);
    },
    refusal(error: WhiskerError): void {
      // a handler that rethrows the refusal (`if (err) throw err`) must not crash the process either
      const fail = (thrown: unknown) => report(thrown === error ? error : handlerError(mode, thrown, null));
      try {
        const result = call(mode === 'listen' ? [error, undefined, undefined] : [error, undefined, NO_DONE, undefined]);
        if (isThenable(result)) result.then(undefined, fail);
      } catch (thrown) {
        fail(thrown);
      }
    },
  };
}

export function handlerError(mode: SubscriptionMode, error: unknown, info: DeliveryInfo | null): WhiskerError {
  const reason = error instanceof Error ? error.message : String(error);
  if (!info) return new WhiskerError('E_HANDLER', `The ${mode} handler threw: ${reason}`, undefined, { cause: error });
  const channel = `${info.channel.endpoint}/${info.channel.version}/${info.channel.id}`;
  return new WhiskerError(
    'E_HANDLER',
    `The ${mode} handler failed on ${channel} (message ${info.messageId}): ${reason}`,
    { messageId: info.messageId, channel: info.channel, nbRequeues: info.nbRequeues },
    { cause: error },
  );
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as PromiseLike<unknown>).then === 'function';
}
