import { setFlagsFromString } from 'node:v8';

/**
 * V8 heap settings for a broker process (`whisker start`: bin/whisker sets them before it loads the CLI): what
 * makes its RSS above the rows it keeps (docs/performance.md, "Where the RSS goes"). With V8's
 * defaults a broker holding 1,000,000 waiting messages had 89 MB of heap committed for 14 MB
 * live: a young generation grown to two 16 MB semi-spaces (33.6 MB, resident once used), and an
 * old generation let grow to 3-4x its live size between two full collections (50 MB for 14-20).
 * - `--semi-space-growth-factor=1`: the young generation stays at the size it starts with (two
 *   semi-spaces of 1 MB) instead of doubling up to 16 MB each. Set at run time on purpose: given on
 *   the command line V8 raises a factor below 2 to 2; set after start it is read as it is at each
 *   scavenge (`--max-semi-space-size` is read only when the heap is made, so `node` would have to
 *   be given it).
 * - `--heap-growing-percent=N`: a full collection once the old generation grew N% past what the
 *   last one kept, not 1.1-4x by V8's estimate of the collector's speed.
 * A process started with either setting of its own (`node --max-semi-space-size=16 ...`, or in
 * NODE_OPTIONS) keeps it: nothing here overrides an operator's choice.
 */
export const HEAP_GROWING_PERCENT = 25;

/** the flags to set, those of them the process was not started with (`execArgv`, NODE_OPTIONS) */
export function brokerHeapFlags(execArgv: readonly string[], nodeOptions: string): string[] {
  const given = [...execArgv, ...nodeOptions.split(/\s+/)].map((a) => a.replace(/_/g, '-'));
  const flags: string[] = [];
  if (!given.some((a) => /^--(max|min)-semi-space-size|^--semi-space-growth-factor/.test(a))) flags.push('--semi-space-growth-factor=1');
  if (!given.some((a) => a.startsWith('--heap-growing-percent'))) flags.push(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return flags;
}

/** sets `brokerHeapFlags` in this process; returns them */
export function setBrokerHeapFlags(): string[] {
  const flags = brokerHeapFlags(process.execArgv, process.env.NODE_OPTIONS ?? '');
  for (const flag of flags) setFlagsFromString(flag);
  return flags;
}
