import { createHash } from 'node:crypto';

export interface WeightedSet {
  readonly name: string;
  readonly weight: number;
}

/**
 * Weighted rendezvous hashing (highest random weight, SPEC §13): every broker that asks picks
 * the same set for a queue from the same live sets, and a set that joins or leaves moves only
 * the choices it wins or loses. Score: -weight / ln(u), u uniform in (0, 1) from sha256.
 */
export function rendezvous(queue: string, sets: Iterable<WeightedSet>): string | null {
  let best: string | null = null;
  let bestScore = -Infinity;
  for (const set of sets) {
    const score = -set.weight / Math.log(unitHash(`${set.name}\n${queue}`));
    if (score > bestScore || (score === bestScore && best !== null && set.name < best)) {
      best = set.name;
      bestScore = score;
    }
  }
  return best;
}

/** a number in (0, 1) from the first 52 bits of sha256 */
function unitHash(text: string): number {
  const digest = createHash('sha256').update(text).digest();
  const high = digest.readUInt32BE(0) >>> 12; // 20 bits
  const low = digest.readUInt32BE(4); // 32 bits
  return (high * 2 ** 32 + low + 0.5) / 2 ** 52;
}
