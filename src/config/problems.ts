import type { ErrorObject } from 'ajv';

/**
 * Turns ajv's errors into the lines a person fixes a config file from: one per problem, each
 * with its dotted key, the constraint that failed and, for an unknown key, the nearest known one.
 */
export interface Problem {
  readonly key: string;
  readonly message: string;
}

/** edit distance (insert, delete, replace, swap of neighbours) */
function distance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

/** the known name nearest to `word` (case aside, or within about a third of its letters), if any */
export function nearest(word: string, known: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = candidate.toLowerCase() === word.toLowerCase() ? 0 : distance(word, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return bestDistance <= Math.max(1, Math.floor(word.length / 3)) ? best : null;
}

const pathOf = (error: ErrorObject): string[] => error.instancePath.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));

function keyOf(error: ErrorObject): string {
  const path = pathOf(error);
  if (error.keyword === 'additionalProperties') path.push(String(error.params.additionalProperty));
  if (error.keyword === 'required') path.push(String(error.params.missingProperty));
  if (error.keyword === 'propertyNames') path.push(String(error.params.propertyName));
  else if (error.propertyName !== undefined) path.push(error.propertyName);
  return path.join('.');
}

function describe(error: ErrorObject): string {
  if (error.keyword === 'additionalProperties') {
    const known = Object.keys((error.parentSchema as { properties?: object } | undefined)?.properties ?? {});
    const guess = nearest(String(error.params.additionalProperty), known);
    return guess ? `unknown key; did you mean "${[...pathOf(error), guess].join('.')}"?` : 'unknown key';
  }
  if (error.keyword === 'propertyNames' || error.propertyName !== undefined) return 'channel names must be "endpoint/version"';
  if (error.keyword === 'enum') return `must be one of ${(error.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
  return error.message ?? 'invalid';
}

/** one problem per key and failed constraint, in file order; a channel name's pattern error once */
export function problemsOf(errors: readonly ErrorObject[]): Problem[] {
  const seen = new Set<string>();
  const problems: Problem[] = [];
  for (const error of errors) {
    // ajv reports a bad property name twice: once for the pattern, once for propertyNames
    if (error.keyword === 'pattern' && error.propertyName !== undefined) continue;
    const problem = { key: keyOf(error), message: describe(error) };
    const id = `${problem.key}\n${problem.message}`;
    if (seen.has(id)) continue;
    seen.add(id);
    problems.push(problem);
  }
  return problems;
}
