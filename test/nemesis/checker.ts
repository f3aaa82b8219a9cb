import type { Sample } from './cluster.js';
import type { Fault } from './schedule.js';

/**
 * The nemesis's checker (issue 27): what the client process recorded and what the brokers'
 * own /metrics said, against the promises of docs/operations.md#the-nemesis. Each check gives
 * a verdict and a message precise enough to start from (which channel, which ids, counts).
 */
export const JOBS = 'jobs/v1/1';
export const FEED = 'feed/v1/1';
type Channel = typeof JOBS | typeof FEED;
/** the listener's records add the arrival (ms epoch), the message id and the sender */
type Got = [p: number, s: number, nbRequeues?: number, at?: number, messageId?: string, from?: string];

/**
 * The nemesis's listener keeps the client's default `dedupeWindow` (docs/client.md): it drops a
 * copy of what it got within that long. A copy that comes later (a master that never saw the
 * ack, delivering again after an outage longer than that: SPEC §8, at least once) is past the
 * window, not past the dedupe: counted apart, with its delay, and not a failure of this check.
 */
export const LISTENER_DEDUPE_MS = 120_000;

export interface Recorded {
  sends: Array<Record<Channel, number[]>>;
  outcome: Array<Record<Channel, Array<[number, string]>>>;
  listened: Record<Channel, Got[]>;
  consumed: Got[][];
  replays: Array<{ at: number; complete: boolean; code?: string; got: Got[] }>;
  final: Got[];
  finalError: string | null;
  pending: number;
  errors: Record<string, number>;
}

export interface Verdict {
  readonly check: string;
  readonly ok: boolean;
  readonly detail: string;
}

/** duplicates a fault may cause, per kind (docs/operations.md#the-nemesis): what was in flight */
export function duplicateBound(faults: readonly Fault[], elections: number, inFlight: number): number {
  return (faults.filter((f) => f.kind !== 'reload' && f.kind !== 'step-down').length + elections) * inFlight;
}

const key = (p: number, s: number) => `${p}:${s}`;
const few = (list: readonly string[], n = 5) => `${list.slice(0, n).join(', ')}${list.length > n ? `, ... (${list.length})` : ''}`;

function answered(r: Recorded, channel: Channel, how: (outcome: string) => boolean): string[] {
  return r.outcome.flatMap((o, p) => o[channel].filter(([, h]) => how(h)).map(([s]) => key(p, s)));
}

/**
 * first arrivals per producer must come in the order sent; returns the breaks as `p:s after p:s`.
 * `redelivered` (the listener): a first arrival with `nbRequeues` over 0 is a redelivery whose
 * first delivery never reached the client (lost with a cut link); SPEC §7 orders first
 * deliveries, and a redelivery "may overtake nothing it was behind", so it may come after newer
 * ones: listed there, not judged here.
 */
function orderBreaks(got: readonly Got[], redelivered?: string[]): string[] {
  const seen = new Set<string>();
  const last = new Map<number, number>();
  const breaks: string[] = [];
  for (const [p, s, nbRequeues] of got) {
    const k = key(p, s);
    if (seen.has(k)) continue;
    seen.add(k);
    if (redelivered && (nbRequeues ?? 0) > 0) {
      if (s < (last.get(p) ?? -1)) redelivered.push(`${k} after ${key(p, last.get(p)!)}`);
      continue;
    }
    const before = last.get(p) ?? -1;
    if (s < before) breaks.push(`${k} after ${key(p, before)}`);
    else last.set(p, s);
  }
  return breaks;
}

export function checkMessages(r: Recorded, faults: readonly Fault[], elections: number, inFlight: number): Verdict[] {
  const verdicts: Verdict[] = [];
  const ok = { [JOBS]: answered(r, JOBS, (h) => h === 'ok'), [FEED]: answered(r, FEED, (h) => h === 'ok') };
  const stored = { [JOBS]: answered(r, JOBS, (h) => h.startsWith('stored')), [FEED]: answered(r, FEED, (h) => h.startsWith('stored')) };
  const failed = [...answered(r, JOBS, (h) => h.startsWith('failed')), ...answered(r, FEED, (h) => h.startsWith('failed'))];
  const codes = new Map<string, number>();
  for (const o of r.outcome) for (const ch of [JOBS, FEED] as const) for (const [, h] of o[ch]) if (h.startsWith('failed')) codes.set(h.slice(7), (codes.get(h.slice(7)) ?? 0) + 1);
  const sent = r.sends.reduce((n, s) => n + s[JOBS].length + s[FEED].length, 0);
  verdicts.push({
    check: 'sends answered',
    ok: r.pending === 0,
    detail: `${sent} sent: ${ok[JOBS].length + ok[FEED].length} OK, ${stored[JOBS].length + stored[FEED].length} E_NO_MASTER stored by a slave, ${failed.length} failed${failed.length ? ` (${[...codes].map(([c, n]) => `${n} ${c}`).join(', ')}: ${few(failed)})` : ''}, ${r.pending} never answered`,
  });

  // lost: an OK send (or one a slave stored) that never reached a recipient
  const recipients: Array<[string, Channel, readonly Got[]]> = [
    ['listener', JOBS, r.listened[JOBS]],
    ['listener', FEED, r.listened[FEED]],
    ['consumers', JOBS, r.consumed.flat()],
  ];
  for (const [who, channel, got] of recipients) {
    const have = new Set(got.map(([p, s]) => key(p, s)));
    const lost = ok[channel].filter((k) => !have.has(k));
    const lostStored = stored[channel].filter((k) => !have.has(k));
    verdicts.push({
      check: `lost (${who}, ${channel})`,
      ok: lost.length === 0 && lostStored.length === 0,
      detail: `${lost.length} of ${ok[channel].length} sends answered OK never delivered${lost.length ? ` (producer:seq ${few(lost)})` : ''}; ${lostStored.length} of ${stored[channel].length} stored by a slave never delivered${lostStored.length ? ` (${few(lostStored)})` : ''}`,
    });
  }

  // duplicates: consumers count every redelivery (client dedupe off); the listener keeps the
  // client's dedupe on, as users do, so it must see none
  const bound = duplicateBound(faults, elections, inFlight);
  const counts = new Map<string, number>();
  for (const [p, s] of r.consumed.flat()) counts.set(key(p, s), (counts.get(key(p, s)) ?? 0) + 1);
  const twice = [...counts].filter(([, n]) => n > 1);
  const extra = twice.reduce((sum, [, n]) => sum + n - 1, 0);
  verdicts.push({ check: `duplicates (consumers, ${JOBS})`, ok: extra <= bound, detail: `${extra} deliveries beyond the first (${twice.length} messages${twice.length ? `: ${few(twice.map(([k, n]) => `${k} x${n}`))}` : ''}); bound ${bound} (${inFlight}, the consumers' prefetch, per fault that can interrupt delivery and per election: ${elections} seen)` });
  for (const channel of [JOBS, FEED] as const) {
    const firstAt = new Map<string, number | undefined>();
    const dup: string[] = [];
    const late: string[] = [];
    for (const [p, s, , at] of r.listened[channel]) {
      const k = key(p, s);
      if (!firstAt.has(k)) {
        firstAt.set(k, at);
        continue;
      }
      const first = firstAt.get(k);
      if (at !== undefined && first !== undefined && at - first > LISTENER_DEDUPE_MS) late.push(`${k} after ${Math.round((at - first) / 1000)} s`);
      else dup.push(k);
    }
    const lateText = late.length ? `; ${late.length} more than ${LISTENER_DEDUPE_MS / 1000} s after the first (${few(late)}): past the client's dedupeWindow, allowed (at least once)` : '';
    verdicts.push({ check: `duplicates (listener, ${channel})`, ok: dup.length === 0, detail: `${dup.length} delivered again past the client's dedupe${dup.length ? ` (${few(dup)})` : ''}; bound 0${lateText}` });
  }

  // order: the listener is one connection that gets every message of both channels
  for (const channel of [JOBS, FEED] as const) {
    const redelivered: string[] = [];
    const breaks = orderBreaks(r.listened[channel], redelivered);
    const apart = redelivered.length ? `; ${redelivered.length} redeliveries (nbRequeues over 0, their first delivery lost with a link) came after newer first deliveries (${few(redelivered)}): allowed (SPEC §7)` : '';
    verdicts.push({ check: `order of first deliveries (listener, ${channel})`, ok: breaks.length === 0, detail: `${breaks.length} per-producer order breaks among ${r.listened[channel].length} deliveries${breaks.length ? ` (${few(breaks)})` : ''}${apart}` });
  }

  // the retained channel's history: the final replay holds every OK send once, in send order
  const finalKeys = r.final.map(([p, s]) => key(p, s));
  const inFinal = new Set(finalKeys);
  const missing = ok[FEED].filter((k) => !inFinal.has(k));
  const finalDup = finalKeys.length - inFinal.size;
  const sentFeed = new Set(r.sends.flatMap((s, p) => s[FEED].map((seq) => key(p, seq))));
  const unsent = finalKeys.filter((k) => !sentFeed.has(k));
  const finalBreaks = orderBreaks(r.final);
  verdicts.push({
    check: `replay equals the answered sends (${FEED})`,
    ok: r.finalError === null && missing.length === 0 && finalDup === 0 && unsent.length === 0 && finalBreaks.length === 0,
    detail: `${r.finalError ? `final replay failed: ${r.finalError}; ` : ''}${r.final.length} replayed, ${ok[FEED].length} answered OK: ${missing.length} missing${missing.length ? ` (${few(missing)})` : ''}, ${finalDup} twice, ${unsent.length} never sent, ${finalBreaks.length} out of send order${finalBreaks.length ? ` (${few(finalBreaks)})` : ''}`,
  });
  const partial = r.replays.filter((x) => !x.complete).length;
  const bad = r.replays.map((x, i) => ({ i, breaks: orderBreaks(x.got), dup: x.got.length - new Set(x.got.map(([p, s]) => key(p, s))).size })).filter((x) => x.breaks.length > 0 || x.dup > 0);
  verdicts.push({
    check: `replays during the run in order (${FEED})`,
    ok: bad.length === 0,
    detail: `${r.replays.length} replays of the last 10 s (${partial} cut short by a fault, allowed), ${bad.length} with order breaks or duplicates${bad.length ? ` (${few(bad.map((x) => `#${x.i}: ${x.breaks.length} breaks e.g. ${x.breaks[0] ?? '-'}, ${x.dup} twice`))})` : ''}`,
  });
  return verdicts;
}

/** 250 ms buckets in which each broker delivered (its counter rose over a short interval) or said master */
export function checkOneDeliverer(samples: ReadonlyMap<string, readonly Sample[]>, periodMs: number): Verdict[] {
  const bucket = (t: number) => Math.floor(t / periodMs);
  const delivering = new Map<number, Set<string>>();
  const master = new Map<number, Set<string>>();
  const mark = (into: Map<number, Set<string>>, b: number, name: string) => into.set(b, (into.get(b) ?? new Set()).add(name));
  for (const [name, unordered] of samples) {
    const series = [...unordered].sort((x, y) => x.t - y.t); // answers to overlapping scrapes may cross
    let prev: Sample | null = null;
    for (const s of series) {
      if (s.up !== 1) continue;
      if (s.role === 1) mark(master, bucket(s.t), name);
      // a longer gap (a stopped or restarted broker) cannot say when its deliveries happened
      if (prev && s.t - prev.t <= 2.5 * periodMs && (s.delivered ?? 0) > (prev.delivered ?? 0)) {
        for (let b = bucket(prev.t) + 1; b <= bucket(s.t); b++) mark(delivering, b, name);
      }
      prev = s;
    }
  }
  const runs = (by: Map<number, Set<string>>) => {
    const found: string[] = [];
    const buckets = [...by.keys()].sort((x, y) => x - y);
    let start = -1;
    let length = 0;
    let who = new Set<string>();
    const close = () => {
      if (length >= 3) found.push(`${new Date(start * periodMs).toISOString()} for ${length * periodMs} ms: ${[...who].sort().join('+')}`);
    };
    for (const b of buckets) {
      const set = by.get(b)!;
      if (set.size >= 2 && start >= 0 && b === start + length) {
        length++;
        for (const n of set) who.add(n);
      } else {
        close();
        start = set.size >= 2 ? b : -1;
        length = set.size >= 2 ? 1 : 0;
        who = new Set(set.size >= 2 ? set : []);
      }
    }
    close();
    return found;
  };
  const both = runs(delivering);
  const masters = runs(master);
  return [
    { check: 'never two brokers delivering at once', ok: both.length === 0, detail: `${both.length} stretches of 750 ms or more in which two brokers' whisker_messages_delivered_total rose${both.length ? ` (${few(both)})` : ''}` },
    { check: 'never two brokers acting as master at once', ok: masters.length === 0, detail: `${masters.length} stretches of 750 ms or more in which two brokers reported whisker_role 1${masters.length ? ` (${few(masters)})` : ''}` },
  ];
}

/** elections seen: how often the epoch (whisker_election_epoch) that any broker reports changed */
export function epochChanges(samples: ReadonlyMap<string, readonly Sample[]>): number {
  const epochs = new Set<number>();
  for (const series of samples.values()) for (const s of series) if (s.up === 1 && s.epoch) epochs.add(s.epoch);
  return Math.max(0, epochs.size - 1);
}

/** a slave that cannot keep up holds what its master sent and it has not applied (~1.2 KB of heap a message): that is in its floor */
function backlog(maxLag: number): string {
  if (maxLag < BACKLOG_SAID) return `peer lag at most ${maxLag} messages`;
  return `the floor includes a backlog: up to ${maxLag} messages from the master not applied yet (this broker could not keep up)`;
}
const BACKLOG_SAID = 1_000;

/** how a broker's heap is judged (docs/operations.md#the-nemesis) */
export interface HeapRule {
  /** floor growth past which a broker is said to grow, MiB a minute */
  readonly boundMiBPerMin: number;
  /**
   * how long after its start a broker's heap may still fill its bounded tables: the dedupe
   * window's ids (the router's and the store's, `dedupeWindow` s of traffic) and a margin
   */
  readonly warmMs: number;
  /** at least this much of the calm phase measured after the warm-up, or the check fails */
  readonly minMeasureMs: number;
}

/**
 * Heap after GC, read as the floor of nodejs_heap_size_used_bytes per 10 s window (each broker
 * runs a full GC every 2 s: gc-every.mjs), over the calm phase from the later of `from` and the
 * broker's last start (`startedAt`, when its process was spawned) plus `warmMs` (a broker restarted late in the faults fills its dedupe
 * tables first: that is not growth); the slope of a least-squares line through the floors, in MiB
 * a minute.
 */
export function checkHeap(samples: ReadonlyMap<string, readonly Sample[]>, from: number, to: number, rule: HeapRule, startedAt: ReadonlyMap<string, number>): Verdict[] {
  const WINDOW = 10_000;
  const mib = (b: number) => b / (1 << 20);
  return [...samples].map(([name, series]) => {
    const started = startedAt.get(name) ?? null;
    const measureFrom = Math.max(from, (started ?? from) + rule.warmMs);
    const points: Array<[minute: number, mib: number]> = [];
    for (let t = measureFrom; t + WINDOW <= to; t += WINDOW) {
      const heaps = series.filter((s) => s.up === 1 && s.t >= t && s.t < t + WINDOW && s.heap).map((s) => s.heap!);
      if (heaps.length > 0) points.push([(t - measureFrom) / 60_000, mib(Math.min(...heaps))]);
    }
    const roles = [...new Set(series.filter((s) => s.up === 1 && s.t >= from && s.t < to).map((s) => (s.role === 1 ? 'master' : 'slave')))];
    const role = roles.join(' then ') || 'down';
    const check = `heap flat once warm (${name}, ${role})`;
    const lags = series.filter((s) => s.up === 1 && s.t >= measureFrom && s.t < to).map((s) => s.lag ?? 0);
    const warm = started !== null && started + rule.warmMs > from
      ? `measured from ${((measureFrom - from) / 1000).toFixed(0)} s into the calm phase (started ${((from - started) / 1000).toFixed(0)} s before it, warm ${rule.warmMs / 1000} s)`
      : `measured over the calm phase`;
    const needed = Math.floor(rule.minMeasureMs / WINDOW);
    const load = stalls(series, measureFrom, to);
    if (points.length < needed) return { check, ok: false, detail: `only ${points.length} windows of ${WINDOW / 1000} s sampled after warm-up (${needed} needed); ${warm}${load}` };
    const mx = points.reduce((a, [x]) => a + x, 0) / points.length;
    const my = points.reduce((a, [, y]) => a + y, 0) / points.length;
    const slope = points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0) / points.reduce((a, [x]) => a + (x - mx) ** 2, 0);
    return {
      check,
      ok: slope <= rule.boundMiBPerMin,
      detail: `heap floor ${slope.toFixed(2)} MiB/min over ${((to - measureFrom) / 60_000).toFixed(1)} min (bound ${rule.boundMiBPerMin}), ${warm}; floors per ${WINDOW / 1000} s: ${points.map(([, y]) => y.toFixed(1)).join(' ')} MiB; ${backlog(Math.max(0, ...lags))}${load}`,
    };
  });
}

/**
 * What the load did to a broker over the measure: samples it did not answer within 1 s (the
 * sampler's limit) and its longest silence. A heap floor measured across a stall includes what
 * the broker could not process meanwhile; the check still judges it, and says so (issue 27:
 * beside the suite at load 15-44 a slave's floor failed while it lagged and stalled).
 */
function stalls(series: readonly Sample[], from: number, to: number): string {
  const span = series.filter((s) => s.t >= from && s.t < to);
  const unanswered = span.filter((s) => s.up !== 1).length;
  if (span.length === 0 || unanswered === 0) return '';
  let longest = 0;
  let lastAnswer = from;
  for (const s of span) {
    if (s.up !== 1) continue;
    longest = Math.max(longest, s.t - lastAnswer);
    lastAnswer = s.t;
  }
  longest = Math.max(longest, to - lastAnswer);
  return `; ${unanswered} of ${span.length} samples unanswered within 1 s (${Math.round((100 * unanswered) / span.length)}%), the longest silence ${Math.round(longest / 1000)} s: the broker stalled (a loaded machine) or was down, and a floor then includes what it could not process meanwhile`;
}
