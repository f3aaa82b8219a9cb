/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// atk27l copy of atk27i's sum.mjs, plus the self-fences (`no longer the elected master` in /tmp/atk27m/logs/NAME/*.log)
// one line per run of test/attacks-27m/runs/*.out: verdict, the master's replay at the verdict (h3: missing OK / stored, twice,
// breaks), 20 s later, or the i2 replay figures; load at begin and end
import { readdirSync, readFileSync, existsSync } from 'node:fs';
const fences = (name) => { const d = `/tmp/atk27m/logs/${name}`; if (!existsSync(d)) return '?'; return readdirSync(d).filter((f) => f.endsWith('.log')).map((f) => `${f[0]}${(readFileSync(`${d}/${f}`, 'utf8').match(/no longer the elected master/g) ?? []).length}`).join(' '); };
const dir = new URL('.', import.meta.url).pathname;
for (const f of readdirSync(dir).filter((x) => x.endsWith('.out')).sort()) {
  const t = readFileSync(dir + f, 'utf8'); const name = f.replace(/\.out$/, ''); const fz = 'fences ' + fences(name);
  const load = (t.match(/# begin \S+ load average: ([\d.]+)/)?.[1] ?? '?') + '-' + (t.match(/# end .* load average: ([\d.]+)/)?.[1] ?? '?');
  const v = t.match(/^(HELD|BROKEN)\s+(.*?) :: (\{.*\})$/m);
  if (!v) { console.log(name, t.includes('result for seed') ? (t.match(/result for seed \d+: \w+/)?.[0]) : 'no verdict', load, fz); continue; }
  const d = JSON.parse(v[3]); const fig = (r) => r ? `len ${r.len} mOK ${r.missingOK} mSt ${r.missingStored} 2x ${r.twice} brk ${r.okBreaks}/${r.noMasterBreaks}` : '-';
  if (d.sum) console.log(name, v[1], JSON.stringify(d.sum), 'accepted', Object.entries(d.answers).filter(([k]) => k === 'OK' || /:.+/.test(k)).reduce((s, [, n]) => s + n, 0), 'final', d.final?.sameSet, JSON.stringify(d.final?.sameSeq), 'load', load, fz);
  else if (d.atVerdict) {
    const m = d.atVerdict.master; const l = d.late20s.master;
    console.log(name, v[1], `events ${d.events.length}`, `verdict master ${m}: ${fig(d.atVerdict[m])}`, `| late master ${l}: ${fig(d.late20s[l])} | others late:`, Object.keys(d.late20s).filter((k) => k.length === 1 && k !== l).map((k) => `${k} ${fig(d.late20s[k])}`).join('; '), `| listener ${fig(d.listener)} | inStepAtLast ${d.inStepAtLast}`, 'load', load, fz);
  } else console.log(name, v[1], `master ${d.master}`, ['a', 'b', 'c'].map((k) => `${k}: ${fig(d[k])}`).join('; '), '| late', ['a', 'b', 'c'].map((k) => `${k}: ${fig(d.late20s?.[k])}`).join('; '), JSON.stringify(d.late20s?.sameSequence), 'load', load, fz);
}
