import type { Settlement, StoredMessage } from './store.js';

/** The log's records as the store handles them; their encodings are in log-format.ts and log-binary.ts. */

/** `[group key, nbRequeues, notBefore ms epoch]` */
export type RecordTuple = readonly [group: string, nbRequeues: number, notBefore: number];

export type LogRecord =
  /** first record of every segment; a snapshot segment replaces everything before it */
  | { readonly k: 'h'; readonly v: number; readonly snapshot: boolean }
  /** an accepted message; in a version 1 snapshot, with its unsettled records (`[]`: waits unassigned) */
  | { readonly k: 'm'; readonly m: StoredMessage; readonly r?: readonly RecordTuple[] }
  // `slot`: in memory only, never written (StoreEvent `slot`): the index applies the record there
  | { readonly k: 'a'; readonly id: string; readonly g: readonly string[]; readonly slot?: number | undefined }
  | { readonly k: 's'; readonly id: string; readonly g: string; readonly o: Settlement; readonly slot?: number | undefined }
  | { readonly k: 'r'; readonly id: string; readonly g: string; readonly n: number; readonly nb: number; readonly slot?: number | undefined }
  | { readonly k: 'x'; readonly id: string; readonly slot?: number | undefined }
  /** snapshot only: an id removed but still inside the dedupe window (SPEC §7) */
  | { readonly k: 'd'; readonly id: string; readonly at: number };
