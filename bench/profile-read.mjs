// Reads a .cpuprofile (from `node --cpu-prof`): self time per function and per area of the code,
// over the broker's first publish .. last ack (start-up and shutdown left out) unless `whole`.
// Used by profile-summary.mjs (one profile) and profile-compare.mjs (two groups of profiles).
import { readFileSync } from 'node:fs';

const BUCKET_US = 100_000;

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

/** { total, idle, busy (µs), byFunction, byArea (Maps of µs), timeline (busy share per 100 ms) } */
export function readProfile(file, { whole = false } = {}) {
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
  if (!whole) {
    const first = samples.findIndex((id) => inStack(id, new Set(['handlePublish'])));
    let last = -1;
    for (let i = samples.length - 1; i >= 0; i--) if (inStack(samples[i], new Set(['handleAck', 'handlePublish']))) { last = i; break; }
    if (first >= 0 && last >= first) [from, to] = [first, last];
  }
  // self time per node: each sample is charged its following time delta
  const selfUs = new Map();
  const timeline = [];
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
  return { total, idle, busy: total - idle, byFunction, byArea, timeline };
}
