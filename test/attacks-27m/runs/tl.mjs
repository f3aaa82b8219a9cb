/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// atk27m (atk27l copy): merged broker log lines of a kept run, short form (used for the log excerpts of README.md)
// node tl.mjs DIR FROM TO [regex]: merged a,b,c log lines (JSON) between FROM and TO (HH:MM:SS.mmm), short form
import { readFileSync } from 'node:fs';
const [dir, from, to, re] = process.argv.slice(2); const R = re ? new RegExp(re) : null;
const skip = /management|listening|no token|store replayed|election on/;
const rows = [];
for (const id of ['a', 'b', 'c']) for (const l of readFileSync(`${dir}/${id}.log`, 'utf8').split('\n')) {
  if (!l.startsWith('{')) continue; let j; try { j = JSON.parse(l); } catch { continue; }
  const t = j.time?.slice(11, 23); if (!t || t < from || t > to) continue; if (skip.test(j.msg)) continue; if (R && !R.test(l)) continue;
  const { level, time, pid, msg, ...rest } = j; rows.push([t, `${t} ${id}${level === 'info' ? '' : ' ' + level} ${msg} ${JSON.stringify(rest).slice(0, 260)}`]);
}
rows.sort((x, y) => x[0] < y[0] ? -1 : 1); for (const [, s] of rows) console.log(s);
