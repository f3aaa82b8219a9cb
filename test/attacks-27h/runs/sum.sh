#!/bin/bash
# sum.sh: one line per run (verdict, commit, load at begin/end, the figures that matter)
cd "$(dirname "$0")"
for f in *.out; do
  n=${f%.out}; h=$(grep -m1 '^# head' $f | sed 's/# //'); b=$(grep -m1 '^# begin' $f | sed 's/.*average: //;s/,.*//'); e=$(grep -m1 '^# end' $f | sed 's/.*average: //;s/,.*//')
  if grep -q '^HELD\|^BROKEN' $f; then
    grep -E '^(HELD|BROKEN)' $f | while read -r l; do
      v=${l%% *}; j=${l#* :: }
      echo "$n $v [$h] load $b-$e :: $(node -e '
const o=JSON.parse(process.argv[1]); const ids=["a","b","c"]; const f=(x)=>x?`${x.len}/${x.okBreaks}+${x.noMasterBreaks}br/${x.twice}tw/${x.missingOK}+${x.missingStored}miss`:"-";
const L=o.late20s??{}; const A=o.atVerdict??o;
console.log(`m0=${o.m0} m1=${o.m1??""} ${o.slave?"slave="+o.slave:""} answers=${JSON.stringify(o.answers)} L=${f(o.listener)} verdict{${ids.map(i=>i+":"+f(A[i])).join(" ")} sameSet=${A.mirrorsSameSetAsMaster??A.sameSetAsMaster}} late{m=${L.master} ${ids.map(i=>i+":"+f(L[i])).join(" ")} sameSet=${L.sameSetAsMaster} seq=${JSON.stringify(L.sameSequence??L.firstDiffFromMaster)}}`)' "$j" 2>/dev/null)"
    done
  else
    echo "$n nemesis [$h] load $b-$e :: $(grep -E 'FAIL|PASS|^ *ok|exit' $f | tr '\n' ' ' | cut -c1-600)"
  fi
done
