#!/bin/bash
# r.sh NAME SCRIPT [VAR=val ...]: runs `nice -n 5 node SCRIPT` with broker logs to /tmp/atk27m/logs/NAME and, on BROKEN,
# data to /tmp/atk27m/data/NAME; writes runs/NAME.out with the commit and the load at begin and end (atk27k r.sh, paths changed)
cd /work/wt-atk27m
name=$1; script=$2; shift 2
out=test/attacks-27m/runs/$name.out
{ echo "# $name: $* node $script"; echo "# head $(git log -1 --format=%h) main $(git log -1 --format=%h main)"; echo "# begin $(date -u +%T) $(uptime | sed 's/.*load/load/')"; } > $out
env ATTACK_LOGS=/tmp/atk27m/logs/$name KEEP_DATA=/tmp/atk27m/data/$name "$@" timeout 900 nice -n 5 node $script >> $out 2>&1
rc=$?
echo "# end $(date -u +%T) rc=$rc $(uptime | sed 's/.*load/load/')" >> $out
echo "$(date -u +%T) $name $* $script rc=$rc" >> test/attacks-27m/runs/runner.log
