import type { Delivery } from '../../protocol/frames.js';

const OPEN = '{"type":"deliver","messages":[';
const CLOSE = ']}';
/** strings up to this long are copied byte by byte when plain ASCII; longer ones by one native write */
const LOOP_MAX = 256;
/**
 * The buffer kept between flushes at most: enough for a delivery or two (prefetch 1). A bigger
 * one is handed out with its frames and made again at the next burst, so an idle connection
 * holds nothing and 10,000 connections that once got a burst do not keep it.
 */
const KEEP_BYTES = 4 * 1024;
const FIRST_BYTES = 2 * 1024;
const EMPTY = Buffer.alloc(0);

/**
 * Deliver frames of one connection, encoded as UTF-8 straight into one reused buffer as the
 * deliveries are queued: no string per delivery, no join, no second encoding by the socket.
 * The text is what `JSON.stringify` makes of each `Delivery` (with `dataJson` spliced in for
 * `data`), comma-separated inside `{"type":"deliver","messages":[...]}`. A frame is closed at
 * `maxBytes` of deliveries or `maxItems` deliveries; `take()` returns each frame as its own buffer.
 */
export class DeliverFrames {
  #buffer = EMPTY;
  #used = 0;
  /** where each closed frame ends in the buffer */
  #ends: number[] = [];
  /** start of the open frame's first delivery, and how many it has */
  #frameStart = -1;
  #items = 0;

  /** bytes queued, frames' own brackets left out */
  get size(): number {
    return this.#used;
  }

  get isEmpty(): boolean {
    return this.#used === 0;
  }

  /** appends one delivery; returns the bytes it took */
  add(d: Delivery, dataJson: string | undefined, maxBytes: number, maxItems: number): number {
    const before = this.#used;
    if (this.#frameStart >= 0 && this.#items >= maxItems) this.#closeFrame();
    const opened = this.#frameStart < 0;
    if (opened) {
      this.#ascii(OPEN);
      this.#frameStart = this.#used;
      this.#items = 0;
    } else {
      this.#byte(0x2c); // ,
    }
    const start = this.#used;
    if (dataJson === undefined) {
      this.#text(JSON.stringify(d));
    } else {
      this.#ascii('{"sub":');
      this.#ascii(String(d.sub));
      this.#ascii(',"messageId":');
      this.#json(d.messageId);
      this.#ascii(',"channel":');
      this.#json(d.channel);
      this.#ascii(',"data":');
      this.#text(dataJson);
      this.#ascii(',"created":');
      this.#ascii(String(d.created));
      this.#ascii(',"nbRequeues":');
      this.#ascii(String(d.nbRequeues));
      this.#ascii(',"from":');
      this.#json(d.from);
      this.#ascii(',"via":');
      this.#json(d.via);
      this.#byte(0x7d); // }
    }
    if (!opened && this.#used - this.#frameStart > maxBytes) this.#moveToNewFrame(start);
    this.#items++;
    return this.#used - before;
  }

  /** every frame queued, none sharing memory with what is queued next (the socket may keep it); then empty */
  take(): Buffer[] {
    if (this.#frameStart >= 0) this.#closeFrame();
    const buffer = this.#buffer;
    // a buffer not kept is handed out as it is; a kept one is copied from
    const keep = buffer.length <= KEEP_BYTES;
    const frames: Buffer[] = [];
    let start = 0;
    for (const end of this.#ends) {
      frames.push(keep ? Buffer.from(buffer.subarray(start, end)) : buffer.subarray(start, end));
      start = end;
    }
    if (!keep) this.#buffer = EMPTY;
    this.clear();
    return frames;
  }

  clear(): void {
    this.#used = 0;
    this.#ends = [];
    this.#frameStart = -1;
    this.#items = 0;
    if (this.#buffer.length > KEEP_BYTES) this.#buffer = EMPTY;
  }

  /**
   * The delivery at `start` made its frame pass maxBytes (frames stay near the client's frame
   * limit): the frame ends before it (its comma becomes the close) and it opens the next one.
   */
  #moveToNewFrame(start: number): void {
    const length = this.#used - start;
    const shift = CLOSE.length + OPEN.length - 1;
    this.#room(shift);
    this.#buffer.copyWithin(start + shift, start, start + length);
    this.#used = start - 1;
    this.#closeFrame();
    this.#ascii(OPEN);
    this.#frameStart = this.#used;
    this.#items = 0;
    this.#used += length;
  }

  #closeFrame(): void {
    this.#ascii(CLOSE);
    this.#ends.push(this.#used);
    this.#frameStart = -1;
  }

  #room(bytes: number): void {
    if (this.#used + bytes <= this.#buffer.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.#used + bytes, this.#buffer.length * 4, FIRST_BYTES));
    this.#buffer.copy(bigger, 0, 0, this.#used);
    this.#buffer = bigger;
  }

  #byte(code: number): void {
    this.#room(1);
    this.#buffer[this.#used++] = code;
  }

  /** a string known to be ASCII (constants, numbers) */
  #ascii(value: string): void {
    const n = value.length;
    this.#room(n);
    const buffer = this.#buffer;
    const at = this.#used;
    for (let i = 0; i < n; i++) buffer[at + i] = value.charCodeAt(i);
    this.#used = at + n;
  }

  /** any text, as UTF-8 */
  #text(value: string): void {
    const n = value.length;
    this.#room(n * 3);
    const buffer = this.#buffer;
    const at = this.#used;
    if (n <= LOOP_MAX) {
      let i = 0;
      for (; i < n; i++) {
        const code = value.charCodeAt(i);
        if (code >= 0x80) break;
        buffer[at + i] = code;
      }
      if (i === n) {
        this.#used = at + n;
        return;
      }
    }
    this.#used = at + buffer.write(value, at);
  }

  /** `JSON.stringify(value)` for a string, without making it when nothing needs escaping */
  #json(value: string): void {
    const n = value.length;
    if (n > LOOP_MAX) return this.#text(JSON.stringify(value));
    this.#room(n + 2);
    const buffer = this.#buffer;
    const at = this.#used;
    buffer[at] = 0x22;
    for (let i = 0; i < n; i++) {
      const code = value.charCodeAt(i);
      // quote, backslash, control characters and non-ASCII: JSON.stringify knows the rules
      if (code < 0x20 || code === 0x22 || code === 0x5c || code >= 0x7f) return this.#text(JSON.stringify(value));
      buffer[at + 1 + i] = code;
    }
    buffer[at + 1 + n] = 0x22;
    this.#used = at + n + 2;
  }
}
