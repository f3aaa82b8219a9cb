#!/bin/bash
# nem.sh NAME SEED [extra args]: the nemesis, 3 minutes, under nice -n 5; writes runs/NAME.out (commit, load at begin and end)
cd /work/wt-atk27h
name=$1; seed=$2; shift 2
out=test/attacks-27h/runs/$name.out
{ echo "# $name: npx vite-node test/nemesis/main.ts -- --seed $seed --minutes 3 $*"; echo "# head $(git log -1 --format=%h) main $(git log -1 --format=%h main)"; echo "# begin $(date -u +%T) $(uptime | sed 's/.*load/load/')"; } > $out
timeout 1200 nice -n 5 npx vite-node test/nemesis/main.ts -- --seed $seed --minutes 3 "$@" >> $out 2>&1
rc=$?
echo "# end $(date -u +%T) rc=$rc $(uptime | sed 's/.*load/load/')" >> $out
echo "$(date -u +%T) $name nemesis seed $seed $* rc=$rc" >> test/attacks-27h/runs/runner.log
