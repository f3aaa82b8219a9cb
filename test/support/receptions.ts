import type { WhiskerClient } from '../../src/client/client.js';

/** one message of the move tests' traffic: `n` counts up per `id` in send order */
export interface Numbered {
  id: string;
  n: number;
}

/**
 * What a consumer or a listener received (the cluster move tests, SPEC §13): how many times each
 * message, and per id the `n` of each first reception in arrival order. Lost, twice and order
 * per id (first receptions) are read from it.
 */
export class Receptions {
  readonly counts = new Map<string, number>();
  /** per id, the n of each first reception, in arrival order */
  readonly order: Map<string, number[]>;

  constructor(ids: readonly string[]) {
    this.order = new Map(ids.map((id) => [id, []]));
  }

  note(body: Numbered): void {
    const key = `${body.id}:${body.n}`;
    const count = this.counts.get(key) ?? 0;
    this.counts.set(key, count + 1);
    if (count === 0) this.order.get(body.id)!.push(body.n);
  }

  get received(): number {
    return this.counts.size;
  }

  /** of the messages answered OK, how many never came */
  lost(owed: readonly Numbered[]): number {
    return owed.filter((b) => !this.counts.has(`${b.id}:${b.n}`)).length;
  }

  /** receptions past the first, summed */
  duplicates(): number {
    return [...this.counts.values()].reduce((sum, n) => sum + n - 1, 0);
  }

  /** where the order per id broke: the n received around each break (a report's help to find the cause) */
  orderBreaks(): string[] {
    const out: string[] = [];
    for (const [id, ns] of this.order) for (let k = 1; k < ns.length; k++) if (ns[k]! < ns[k - 1]!) out.push(`${id}@${k}: ${ns.slice(Math.max(0, k - 3), k + 3).join(',')}`);
    return out;
  }
}

/**
 * A retained queue's history against the sends answered OK: per id, the replay must be every
 * answered `n` once, in send order. Returns what differs, one line per id (empty: whole).
 */
export async function historyBreaks(client: WhiskerClient, queue: `${string}/${string}`, ids: readonly string[], owed: readonly Numbered[]): Promise<string[]> {
  const breaks: string[] = [];
  for (const id of ids) {
    const replayed: number[] = [];
    for await (const msg of client.replay<Numbered>(`${queue}/${id}`, { since: 0 })) replayed.push(msg.data.n);
    const want = owed.filter((b) => b.id === id).map((b) => b.n).sort((x, y) => x - y);
    if (JSON.stringify(replayed) === JSON.stringify(want)) continue;
    const at = replayed.findIndex((n, k) => n !== want[k]);
    breaks.push(`${id}: ${replayed.length} replayed, ${want.length} answered, first difference at ${at}: ${replayed.slice(Math.max(0, at - 3), at + 8).join(',')}`);
  }
  return breaks;
}
