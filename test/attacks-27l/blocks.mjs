/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// atk27l: reads a forensic replays.json (../attacks-27i/forensic-replays.mjs) and prints, per broker, its order breaks as
// blocks (runs of consecutive positions whose record comes after a later send of the same producer), largest first, with
// per-producer ranges and the records just before the block; then, for KEYS (p:n,...), where each broker holds them.
// node test/attacks-27l/blocks.mjs /tmp/atk27l/forensic/NAME/replays.json [MIN=50] [KEYS]
import { readFileSync } from 'node:fs';
const [file, minArg, keysArg] = process.argv.slice(2); const min = Number(minArg ?? 50);
const res = JSON.parse(readFileSync(file, 'utf8'));
const ranges = (recs) => { const byP = {}; for (const [p, n] of recs) (byP[p] ??= []).push(n); return Object.entries(byP).map(([p, ns]) => { ns.sort((x, y) => x - y); const rs = []; let s = ns[0], e = ns[0]; for (const n of ns.slice(1)) { if (n === e + 1) e = n; else { rs.push(s === e ? `${s}` : `${s}-${e}`); s = e = n; } } rs.push(s === e ? `${s}` : `${s}-${e}`); return `p${p} ${ns.length} (${rs.slice(0, 4).join(',')}${rs.length > 4 ? ',...' : ''})`; }).join('; '); };
for (const [id, seq] of Object.entries(res)) {
  const mx = {}; const seen = new Set(); const blocks = []; let cur = null;
  seq.forEach(([p, n], i) => {
    const k = p + ':' + n; const dup = seen.has(k); seen.add(k);
    const br = dup || (mx[p] !== undefined && n < mx[p]);
    if (br) { if (cur && cur.end === i - 1) { cur.end = i; cur.recs.push([p, n]); cur.dups += dup ? 1 : 0; } else { cur = { start: i, end: i, recs: [[p, n]], dups: dup ? 1 : 0, before: seq.slice(Math.max(0, i - 2), i).map(([a, b]) => a + ':' + b) }; blocks.push(cur); } }
    mx[p] = Math.max(mx[p] ?? -1, n);
  });
  const big = blocks.filter((b) => b.recs.length >= min).sort((x, y) => y.recs.length - x.recs.length);
  console.log(`== ${id}: ${seq.length} records, ${blocks.reduce((s, b) => s + b.recs.length, 0)} out of order or twice in ${blocks.length} blocks; ${big.length} of >= ${min}:`);
  for (const b of big.slice(0, 12)) console.log(`  ${b.start}-${b.end} (${b.recs.length}, twice ${b.dups}) after ${b.before.join(' ')}: ${ranges(b.recs)}`);
}
if (keysArg) for (const k of keysArg.split(',')) console.log(k, Object.entries(res).map(([id, seq]) => { const at = []; seq.forEach(([p, n], i) => { if (p + ':' + n === k) at.push(i); }); return `${id}@${at.join('/') || '-'}${at.length ? ' prev ' + at.map((i) => seq[i - 1]?.join(':')).join('/') : ''}`; }).join('  '));
