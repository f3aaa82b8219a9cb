#!/bin/bash
# nem.sh NAME SEED: `npm run nemesis -- --seed SEED --minutes 3` under nice -n 5 (atk27k nem.sh, through npm run as the brief says)
cd /work/wt-atk27m
name=$1; seed=$2; shift 2
out=test/attacks-27m/runs/$name.out
{ echo "# $name: npm run nemesis -- --seed $seed --minutes 3 $*"; echo "# head $(git log -1 --format=%h) main $(git log -1 --format=%h main)"; echo "# begin $(date -u +%T) $(uptime | sed 's/.*load/load/')"; } > $out
timeout 1200 nice -n 5 npm run nemesis -- --seed $seed --minutes 3 "$@" >> $out 2>&1
rc=$?
echo "# end $(date -u +%T) rc=$rc $(uptime | sed 's/.*load/load/')" >> $out
echo "$(date -u +%T) $name nemesis seed $seed $* rc=$rc" >> test/attacks-27m/runs/runner.log
