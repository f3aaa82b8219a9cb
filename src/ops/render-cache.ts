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
 * answers share its memory.
 */
export class RenderCache {
  readonly #render: () => Promise<string>;
  readonly #now: () => number;
  #body: Buffer | null = null;
  #freshUntil = 0;
  #rendering: Promise<Buffer> | null = null;

  constructor(render: () => Promise<string>, now: () => number = () => performance.now()) {
    this.#render = render;
    this.#now = now;
  }

  /** the kept render, if still fresh: serving it costs no memory */
  get fresh(): Buffer | null {
    return this.#body && this.#now() < this.#freshUntil ? this.#body : null;
  }

  get(): Promise<Buffer> {
    const fresh = this.fresh;
    if (fresh) return Promise.resolve(fresh);
    this.#rendering ??= this.#renderNow().finally(() => (this.#rendering = null));
    return this.#rendering;
  }

  async #renderNow(): Promise<Buffer> {
    const started = this.#now();
    const body = Buffer.from(await this.#render());
    const tookMs = this.#now() - started;
    this.#body = body;
    this.#freshUntil = tookMs < KEEP_AFTER_MS ? 0 : this.#now() + Math.min(KEEP_FACTOR * tookMs, KEEP_MAX_MS);
    return body;
  }
}
