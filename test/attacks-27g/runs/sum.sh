#!/bin/sh
# one line per check of each run: run, HELD/BROKEN, the check's name (before " :: "), and the run's begin/end load
cd "$(dirname "$0")"
for f in $(ls -tr *.out); do
  b=$(grep -m1 '^# begin' $f | sed 's/# begin //'); e=$(grep -m1 '^# end' $f | sed 's/# end //')
  grep -E '^(HELD|BROKEN)' $f | sed 's/ :: .*//' | sed "s|^|${f%.out}  |"
  grep -E 'result for seed|  FAIL ' $f | sed 's/^\[nemesis [0-9:.]*\] *//' | sed "s|^|${f%.out}  |"
  echo "${f%.out}  [begin $b | end $e]"
done
