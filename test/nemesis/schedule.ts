/**
 * The nemesis's fault schedule (issue 27): drawn from a seed alone, so the same seed replays the
 * same schedule. Targets are brokers by name or "the master" (resolved when the fault runs, and
 * logged); the first faults are every kind once, in an order the seed picks, then at random.
 */
export type FaultKind = 'kill9' | 'sigstop' | 'partition' | 'etcd-restart' | 'reload' | 'step-down' | 'restart-no-etcd';

export const FAULT_KINDS: readonly FaultKind[] = ['kill9', 'sigstop', 'partition', 'etcd-restart', 'reload', 'step-down', 'restart-no-etcd'];

/** broker names; `e` is etcd, `k` the client process */
export const BROKERS = ['a', 'b', 'c'] as const;
export const NODES = ['a', 'b', 'c', 'e', 'k'] as const;

export interface Fault {
  /** ms after the start of the fault phase (a fault starts no earlier, and after the previous one healed) */
  readonly atMs: number;
  readonly kind: FaultKind;
  /** a broker, 'master', or for a partition the pair 'a|e' */
  readonly target: string;
  /** how long the fault lasts before it heals (down time, stop time, cut time) */
  readonly ms: number;
}

/** mulberry32: a small seeded PRNG, enough to draw a schedule */
export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const between = (r: () => number, lo: number, hi: number) => Math.round(lo + r() * (hi - lo));
const pick = <T>(r: () => number, from: readonly T[]): T => from[Math.floor(r() * from.length)]!;

function draw(r: () => number, kind: FaultKind, atMs: number): Fault {
  const broker = () => (r() < 0.5 ? 'master' : pick(r, BROKERS));
  switch (kind) {
    case 'kill9':
      return { atMs, kind, target: broker(), ms: between(r, 500, 5_000) };
    case 'sigstop':
      return { atMs, kind, target: broker(), ms: between(r, 1_000, 6_000) };
    case 'partition': {
      // any pair of nodes: broker-broker, broker-etcd, client-broker
      const pairs: string[] = [];
      for (let i = 0; i < NODES.length; i++) for (let j = i + 1; j < NODES.length; j++) if (!(NODES[i] === 'e' && NODES[j] === 'k')) pairs.push(`${NODES[i]}|${NODES[j]}`);
      return { atMs, kind, target: pick(r, pairs), ms: between(r, 2_000, 10_000) };
    }
    case 'etcd-restart':
      return { atMs, kind, target: 'e', ms: between(r, 1_000, 8_000) };
    case 'reload':
      return { atMs, kind, target: broker(), ms: 0 };
    case 'step-down':
      return { atMs, kind, target: 'master', ms: 0 };
    case 'restart-no-etcd':
      return { atMs, kind, target: broker(), ms: between(r, 3_000, 8_000) };
  }
}

/** the faults of a fault phase of `phaseMs`; `averageGapMs` of quiet between two faults */
export function schedule(seed: number, phaseMs: number, averageGapMs = 4_000): Fault[] {
  const r = prng(seed);
  const firsts = [...FAULT_KINDS];
  for (let i = firsts.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [firsts[i], firsts[j]] = [firsts[j]!, firsts[i]!];
  }
  const faults: Fault[] = [];
  let at = 0;
  for (;;) {
    at += between(r, averageGapMs / 2, (averageGapMs * 3) / 2);
    const kind = firsts.shift() ?? pick(r, FAULT_KINDS);
    const fault = draw(r, kind, at);
    // a fault's own time plus what recovery takes (a new master within the lease + ~1 s)
    if (at + fault.ms > phaseMs) break;
    faults.push(fault);
    at += fault.ms + (kind === 'reload' ? 1_000 : 4_000);
  }
  return faults;
}

export function describe(fault: Fault): string {
  const at = `t+${(fault.atMs / 1000).toFixed(1)}s`;
  const s = (fault.ms / 1000).toFixed(1);
  switch (fault.kind) {
    case 'kill9':
      return `${at} kill -9 ${fault.target}, restarted after ${s} s`;
    case 'sigstop':
      return `${at} SIGSTOP ${fault.target} for ${s} s, then SIGCONT`;
    case 'partition':
      return `${at} partition ${fault.target.replace('|', '-')} for ${s} s`;
    case 'etcd-restart':
      return `${at} etcd kill -9, restarted after ${s} s`;
    case 'reload':
      return `${at} reload ${fault.target} (SIGHUP)`;
    case 'step-down':
      return `${at} whisker step-down on the master`;
    case 'restart-no-etcd':
      return `${at} kill -9 ${fault.target}, restarted cut off from etcd for ${s} s`;
  }
}
