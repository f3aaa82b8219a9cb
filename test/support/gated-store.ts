import { MemoryStore } from '../../src/broker/store/memory.js';
import type { StoredMessage } from '../../src/broker/store/store.js';

/** a MemoryStore whose appends wait, while `gated`, until the test calls each function in `gate` (a disk write under way) */
export class GatedStore extends MemoryStore {
  readonly gate: Array<() => void> = [];
  gated = false;
  override append(messages: readonly StoredMessage[]): Promise<void> {
    if (!this.gated) return super.append(messages);
    return new Promise((resolve) => this.gate.push(() => resolve(super.append(messages))));
  }
}
