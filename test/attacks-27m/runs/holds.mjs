/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// atk27m (atk27l copy): per run, from /tmp/atk27m/logs/NAME/{a,b,c}.log: self-fences, the holds of a master catching up (bf2774b's change:
// at most 5 s as master over its elections): the longest `waitedMs` of `no longer wait for the peers' offers`, the longest
// `heldMs` of `held while catching up are queued` as master, how many holds; the 30 s replay-wait warn lines
// node test/attacks-27m/runs/holds.mjs NAME...
import { readFileSync, existsSync } from 'node:fs';
for (const name of process.argv.slice(2)) {
  const out = [];
  for (const id of ['a', 'b', 'c']) {
    const f = `/tmp/atk27m/logs/${name}/${id}.log`; if (!existsSync(f)) continue;
    let fences = 0, holds = 0, waitedMax = 0, heldMax = 0, replayWarn = 0, offeredAfter = 0;
    for (const l of readFileSync(f, 'utf8').split('\n')) {
      if (!l.startsWith('{')) continue; let j; try { j = JSON.parse(l); } catch { continue; }
      if (/no longer the elected master/.test(j.msg)) fences++;
      if (/no longer wait for the peers/.test(j.msg)) waitedMax = Math.max(waitedMax, j.waitedMs ?? 0);
      if (/held while catching up are queued/.test(j.msg) && !/in step/.test(j.reason ?? '')) { holds++; heldMax = Math.max(heldMax, j.heldMs ?? 0); }
      if (/replay served before this master wrote/.test(j.msg)) replayWarn++;
    }
    out.push(`${id}: fences ${fences}, master holds ${holds}, waitedMax ${waitedMax}, heldMax ${heldMax}, replay30sWarn ${replayWarn}`);
  }
  console.log(name, '|', out.join(' | '));
}
