import type { WhiskerError } from '../protocol/errors.js';

/**
 * A promise that knows whether anybody looked at it: `then`, `catch`, `finally` and `await`
 * all go through `then`. What it derives is a plain Promise (species), so a caller's own chain
 * follows the usual rules.
 */
class ObservedPromise<T> extends Promise<T> {
  static override get [Symbol.species](): PromiseConstructor {
    return Promise;
  }

  observed = false;

  override then<R1 = T, R2 = never>(
    onFulfilled?: ((value: T) => R1 | PromiseLike<R1>) | null,
    onRejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    this.observed = true;
    return super.then(onFulfilled, onRejected);
  }
}

/**
 * The promise of a call made without a callback (docs/client.md#promises). Its failure is
 * reported once: rejected to whoever attached a handler (`await`, `.then`, `.catch`) before
 * the turn after it failed, else given to `report` (the `error` event, or a process warning),
 * so an unawaited `mq.send()` never ends the process with an unhandled rejection.
 */
export function reportedPromise<T>(work: (resolve: (value: T) => void, reject: (error: WhiskerError) => void) => void, report: (error: WhiskerError) => void): Promise<T> {
  const promise = new ObservedPromise<T>(work);
  // the base `then`: marks the rejection handled for Node without counting as an observer
  void Promise.prototype.then.call(promise, undefined, (error: WhiskerError) => {
    setImmediate(() => {
      if (!promise.observed) report(error);
    });
  });
  return promise;
}
