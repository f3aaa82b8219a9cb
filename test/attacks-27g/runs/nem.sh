#!/bin/bash
# nem.sh NAME SEED [extra args]
cd /work/wt-atk27g
name=$1; seed=$2; shift 2
out=test/attacks-27g/runs/$name.out
{ echo "# $name: npx vite-node test/nemesis/main.ts -- --seed $seed --minutes 3 $*"; echo "# begin $(date -u +%T) $(uptime | sed 's/.*load/load/')"; } > $out
timeout 1200 nice -n 5 npx vite-node test/nemesis/main.ts -- --seed $seed --minutes 3 "$@" >> $out 2>&1
rc=$?
echo "# end $(date -u +%T) rc=$rc $(uptime | sed 's/.*load/load/')" >> $out
echo "$(date -u +%T) $name nemesis seed $seed $* rc=$rc" >> test/attacks-27g/runs/runner.log
