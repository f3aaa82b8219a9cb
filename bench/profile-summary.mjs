// Summarises a .cpuprofile (from `node --cpu-prof`): top functions by self time, and self time
// by where the code lives, counted from the broker's first publish to its last ack (so start-up
// and shutdown are left out), plus a busy/idle timeline of that window.
// Usage: node bench/profile-summary.mjs FILE.cpuprofile [top=25] [--all]
import { readProfile } from './profile-read.mjs';

const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const wholeProfile = process.argv.includes('--all');
const [file, topArg] = positional;
if (!file) {
  console.error('usage: node bench/profile-summary.mjs FILE.cpuprofile [top]');
  process.exit(2);
}
const top = Number(topArg ?? 25);
const { total, idle, busy, byFunction, byArea, timeline } = readProfile(file, { whole: wholeProfile });
const row = (us) => `${(us / 1000).toFixed(0).padStart(7)} ms ${((100 * us) / busy).toFixed(1).padStart(5)}%`;

console.log(`${file}\n${wholeProfile ? 'whole profile' : 'window first publish .. last ack'}: ${(total / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s, busy ${(busy / 1e6).toFixed(2)} s (percentages are of busy time)`);
console.log(`busy per 100 ms: ${timeline.map((b) => `${Math.round((100 * b.busy) / (b.all || 1))}%`).join(' ')}\n`);
console.log('self time by area:');
for (const [a, us] of [...byArea].filter(([a]) => a !== '(idle)').sort((x, y) => y[1] - x[1])) console.log(`${row(us)}  ${a}`);
console.log(`\ntop ${top} functions by self time:`);
for (const [k, us] of [...byFunction].filter(([k]) => !k.startsWith('(idle)')).sort((x, y) => y[1] - x[1]).slice(0, top)) console.log(`${row(us)}  ${k}`);
