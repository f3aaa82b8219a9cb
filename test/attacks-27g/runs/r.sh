#!/bin/bash
# r.sh NAME SCRIPT [VAR=val ...]
cd /work/wt-atk27g
name=$1; script=$2; shift 2
out=test/attacks-27g/runs/$name.out
{ echo "# $name: $* node $script"; echo "# begin $(date -u +%T) $(uptime | sed 's/.*load/load/')"; } > $out
env ATTACK_LOGS=/tmp/atk27g/logs/$name "$@" timeout 900 nice -n 5 node $script >> $out 2>&1
rc=$?
echo "# end $(date -u +%T) rc=$rc $(uptime | sed 's/.*load/load/')" >> $out
echo "$(date -u +%T) $name $* $script rc=$rc" >> test/attacks-27g/runs/runner.log
