// Summarises a .cpuprofile (from `node --cpu-prof`): top functions by self time, and self time
// by where the code lives, counted from the broker's first publish to its last ack (so start-up
// and shutdown are left out), plus a busy/idle timeline of that window.
// Usage: node bench/profile-summary.mjs FILE.cpuprofile [top=25] [--all]
import { readFileSync } from 'node:fs';

const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const wholeProfile = process.argv.includes('--all');
const [file, topArg] = positional;
if (!file) {
  console.error('usage: node bench/profile-summary.mjs FILE.cpuprofile [top]');
  process.exit(2);
}
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));

const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const inStack = (id, names) => {
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) if (names.has(byId.get(cur).callFrame.functionName)) return true;
  return false;
};

// the window: first sample under handlePublish .. last sample under handleAck
const { samples, timeDeltas } = profile;
let from = 0;
let to = samples.length - 1;
if (!wholeProfile) {
  const first = samples.findIndex((id) => inStack(id, new Set(['handlePublish'])));
  let last = -1;
  for (let i = samples.length - 1; i >= 0; i--) if (inStack(samples[i], new Set(['handleAck', 'handlePublish']))) { last = i; break; }
  if (first >= 0 && last >= first) [from, to] = [first, last];
}

// self time per node: each sample is charged its following time delta
const selfUs = new Map();
const timeline = [];
const BUCKET_US = 100_000;
let t = 0;
for (let i = from; i <= to; i++) {
  const dt = timeDeltas[i + 1] ?? 0;
  selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + dt);
  const b = Math.floor(t / BUCKET_US);
  timeline[b] ??= { busy: 0, all: 0 };
  timeline[b].all += dt;
  if (byId.get(samples[i]).callFrame.functionName !== '(idle)') timeline[b].busy += dt;
  t += dt;
}

const short = (url) => {
  if (!url) return '';
  const u = url.replace(/^file:\/\//, '');
  const nm = u.lastIndexOf('node_modules/');
  if (nm >= 0) return u.slice(nm + 'node_modules/'.length);
  const dist = u.lastIndexOf('/dist/');
  if (dist >= 0) return u.slice(dist + 1);
  return u.replace(/^node:/, 'node:');
};
const area = (frame) => {
  const { functionName, url } = frame;
  if (!url) {
    if (['(idle)', '(program)', '(garbage collector)', '(root)'].includes(functionName)) return functionName;
    return '(native/builtin)';
  }
  if (url.includes('node_modules/')) return short(url).split('/')[0];
  if (url.includes('/dist/')) return `whisker ${short(url).split('/').slice(1, 3).join('/')}`;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[1] ?? url.slice(5)}`;
  return 'other';
};

let total = 0;
const byFunction = new Map();
const byArea = new Map();
for (const [id, us] of selfUs) {
  const { callFrame } = byId.get(id);
  total += us;
  const key = `${callFrame.functionName || '(anonymous)'}  ${short(callFrame.url)}${callFrame.url ? `:${callFrame.lineNumber + 1}` : ''}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + us);
  const a = area(callFrame);
  byArea.set(a, (byArea.get(a) ?? 0) + us);
}
const idle = byArea.get('(idle)') ?? 0;
const busy = total - idle;
const row = (us) => `${(us / 1000).toFixed(0).padStart(7)} ms ${((100 * us) / busy).toFixed(1).padStart(5)}%`;

console.log(`${file}\n${wholeProfile ? 'whole profile' : 'window first publish .. last ack'}: ${(total / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s, busy ${(busy / 1e6).toFixed(2)} s (percentages are of busy time)`);
console.log(`busy per 100 ms: ${timeline.map((b) => `${Math.round((100 * b.busy) / (b.all || 1))}%`).join(' ')}\n`);
console.log('self time by area:');
for (const [a, us] of [...byArea].filter(([a]) => a !== '(idle)').sort((x, y) => y[1] - x[1])) console.log(`${row(us)}  ${a}`);
console.log(`\ntop ${top} functions by self time:`);
for (const [k, us] of [...byFunction].filter(([k]) => !k.startsWith('(idle)')).sort((x, y) => y[1] - x[1]).slice(0, top)) console.log(`${row(us)}  ${k}`);
