import { appendFileSync } from 'node:fs';

/**
 * A debug option: with WHISKER_HISTORY_TRACE=<dir>, each history write of a retained channel is
 * traced to `<dir>/<pid>.trace` (one JSON line: what wrote, where, which records). Off by default.
 */
const TRACE_DIR = process.env.WHISKER_HISTORY_TRACE;

export const tracing = TRACE_DIR !== undefined && TRACE_DIR !== '';

interface Traced {
  readonly messageId: string;
  readonly data?: unknown;
}

/** a record's short name: the attack scripts' `p:n` when its data has them, else its message id */
export function traceIds(records: Iterable<Traced>): string[] {
  const ids: string[] = [];
  for (const r of records) {
    const d = r.data as { p?: unknown; n?: unknown } | undefined;
    ids.push(d && typeof d === 'object' && d.p !== undefined && d.n !== undefined ? `${String(d.p)}:${String(d.n)}=${r.messageId}` : r.messageId);
  }
  return ids;
}

export function trace(event: string, fields: Record<string, unknown>): void {
  if (!tracing) return;
  try {
    appendFileSync(`${TRACE_DIR}/${process.pid}.trace`, `${JSON.stringify({ t: new Date().toISOString(), event, ...fields })}\n`);
  } catch {
    // a trace never stops the broker
  }
}
