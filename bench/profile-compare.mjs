// Compares two groups of broker profiles (node --cpu-prof) that handled as many messages per
// broker (bench/cluster.mjs --cpu-prof-dir: every broker of every layout does): busy time per
// broker, then the areas and functions whose self time per broker differs most, B - A.
// Usage: node bench/profile-compare.mjs A1.cpuprofile[,A2...] B1.cpuprofile[,B2...] [top=20] [--all]
import { readProfile } from './profile-read.mjs';

const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const whole = process.argv.includes('--all');
const [a, b, topArg] = positional;
if (!a || !b) {
  console.error('usage: node bench/profile-compare.mjs A.cpuprofile[,A2...] B.cpuprofile[,B2...] [top] [--all]');
  process.exit(2);
}
const top = Number(topArg ?? 20);

/** self time per key, averaged over the group's profiles (one per broker) */
function group(files) {
  const profiles = files.split(',').map((f) => readProfile(f, { whole }));
  const mean = (pick) => {
    const out = new Map();
    for (const p of profiles) for (const [k, us] of pick(p)) out.set(k, (out.get(k) ?? 0) + us / profiles.length);
    return out;
  };
  return { n: profiles.length, busy: profiles.reduce((s, p) => s + p.busy, 0) / profiles.length, byArea: mean((p) => p.byArea), byFunction: mean((p) => p.byFunction) };
}

const A = group(a);
const B = group(b);
const ms = (us) => `${(us / 1000).toFixed(0).padStart(6)} ms`;
console.log(`busy per broker: A ${ms(A.busy)} (${A.n} profile(s)), B ${ms(B.busy)} (${B.n}): B/A ${(B.busy / A.busy).toFixed(3)}`);
const diff = (x, y) => [...new Set([...x.keys(), ...y.keys()])].filter((k) => !k.startsWith('(idle)')).map((k) => [k, x.get(k) ?? 0, y.get(k) ?? 0]);
const print = (title, rows) => {
  console.log(`\n${title} (A, B, B - A, B - A as % of A's busy time):`);
  for (const [k, x, y] of rows.sort((p, q) => Math.abs(q[2] - q[1]) - Math.abs(p[2] - p[1])).slice(0, top)) console.log(`${ms(x)} ${ms(y)} ${ms(y - x)} ${((100 * (y - x)) / A.busy).toFixed(1).padStart(6)}%  ${k}`);
};
print('self time by area', diff(A.byArea, B.byArea));
print(`top ${top} functions by the difference`, diff(A.byFunction, B.byFunction));
