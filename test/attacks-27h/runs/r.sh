#!/bin/bash
# r.sh NAME SCRIPT [VAR=val ...]: runs `nice -n 5 node SCRIPT` with broker logs to /tmp/atk27h/logs/NAME and, on BROKEN,
# data to /tmp/atk27h/data/NAME; writes runs/NAME.out with the main commit merged and the load at begin and end
cd /work/wt-atk27h
name=$1; script=$2; shift 2
out=test/attacks-27h/runs/$name.out
{ echo "# $name: $* node $script"; echo "# head $(git log -1 --format=%h) main $(git log -1 --format=%h main)"; echo "# begin $(date -u +%T) $(uptime | sed 's/.*load/load/')"; } > $out
env ATTACK_LOGS=/tmp/atk27h/logs/$name KEEP_DATA=/tmp/atk27h/data/$name "$@" timeout 900 nice -n 5 node $script >> $out 2>&1
rc=$?
echo "# end $(date -u +%T) rc=$rc $(uptime | sed 's/.*load/load/')" >> $out
echo "$(date -u +%T) $name $* $script rc=$rc" >> test/attacks-27h/runs/runner.log
