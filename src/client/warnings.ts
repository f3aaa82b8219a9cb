import type { WhiskerError } from '../protocol/errors.js';

/** how long repeats of one code are counted before they are told as one line */
const WINDOW_MS = 1_000;

/**
 * Failures nobody listens to (no `error` listener, promise not awaited) become process
 * warnings (docs/client.md#promises). A Kitten-style `send` without callback while the broker
 * is away fails thousands of times: the first of each code is printed whole, the repeats in the
 * next second are counted and told in one line, so the log says what happened without a line
 * per message.
 */
export class UnheardWarnings {
  readonly #repeats = new Map<string, number>();

  warn(error: WhiskerError): void {
    const repeats = this.#repeats.get(error.code);
    if (repeats !== undefined) {
      this.#repeats.set(error.code, repeats + 1);
      return;
    }
    process.emitWarning(error);
    this.#repeats.set(error.code, 0);
    setTimeout(() => this.#flush(error.code), WINDOW_MS).unref();
  }

  #flush(code: string): void {
    const repeats = this.#repeats.get(code) ?? 0;
    this.#repeats.delete(code);
    if (repeats > 0) {
      process.emitWarning(`${repeats} more ${code} failure${repeats === 1 ? '' : 's'} like the one above within ${WINDOW_MS / 1000} s (add an 'error' listener to handle each one)`, { type: 'WhiskerWarning', code });
    }
  }
}
