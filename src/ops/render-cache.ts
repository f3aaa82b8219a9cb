import { performance } from 'node:perf_hooks';

/** a render faster than this is not kept: only scrapes that arrive during it share it */
const KEEP_AFTER_MS = 10;
/** a kept render is served for this many times as long as it took to make */
const KEEP_FACTOR = 10;
const KEEP_MAX_MS = 5_000;

/**
 * The /metrics text, rendered once for every scrape that arrives while it is fresh
 * (docs/management.md#metrics): scrapes at once share one render, and a render that took
 * `t` ms (over 10) is served for 10 t ms (at most 5 s), so scraping takes about a tenth of the
 * event loop at most, whatever the rate. One Buffer is written to every socket, so unread
 * answers share its memory. A kept render is served only while `state()` (the broker's role
 * and epoch) is what it was when the render began: a render's time includes any stop of the
 * process, and a master SIGSTOPped in one kept `whisker_role 1` for 5 s after it stopped
 * delivering.
 */
export class RenderCache {
  readonly #render: () => Promise<string>;
  readonly #now: () => number;
  #body: Buffer | null = null;
  #freshUntil = 0;
  #rendering: Promise<Buffer> | null = null;
  readonly #state: () => string;
  /** `state()` when the kept render began */
  #keptIn = '';

  constructor(render: () => Promise<string>, now: () => number = () => performance.now(), state: () => string = () => '') {
    this.#render = render;
    this.#now = now;
    this.#state = state;
  }

  /** the kept render, if still fresh and made in the broker's present state: serving it costs no memory */
  get fresh(): Buffer | null {
    return this.#body && this.#now() < this.#freshUntil && this.#state() === this.#keptIn ? this.#body : null;
  }

  get(): Promise<Buffer> {
    const fresh = this.fresh;
    if (fresh) return Promise.resolve(fresh);
    this.#rendering ??= this.#renderNow().finally(() => (this.#rendering = null));
    return this.#rendering;
  }

  async #renderNow(): Promise<Buffer> {
    const started = this.#now();
    const state = this.#state();
    const body = Buffer.from(await this.#render());
    const tookMs = this.#now() - started;
    this.#body = body;
    this.#keptIn = state;
    this.#freshUntil = tookMs < KEEP_AFTER_MS ? 0 : this.#now() + Math.min(KEEP_FACTOR * tookMs, KEEP_MAX_MS);
    return body;
  }
}
